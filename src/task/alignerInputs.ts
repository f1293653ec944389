import type { Observable } from 'rxjs';
import { CancelCheckpointMarker, Watermark, WATERMARK_ACTIVE, WATERMARK_IDLE, type RecordTimestamp, type StreamElement } from '../core/elements.js';
import type { AlignerCallbacks, BarrierAligner } from './barrierAligner.js';
import { subscribeTo } from './directObservable.js';

/**
 * Feeds each of `inputs` into `aligner` as its input channel of the same index, until `output` closes: elements go
 * through `push` (so a caller can guard it or pass the record's timestamp), and those an input knows to be records
 * through `recordInput(input)` when given (see `DirectObserver.nextRecord`), which drops them itself once `output`
 * closed; an input's end ends its channel, and any input's error errors `output`. Returns what stops reading them
 * all. Shared by every place that aligns barriers over several flows (a multi-input operator, a source's parallel
 * subtasks).
 */
export function feedAligner(
  inputs: readonly Observable<StreamElement<unknown>>[],
  aligner: Pick<BarrierAligner, 'end'>,
  output: { readonly closed: boolean; error(error: unknown): void },
  push: (input: number, element: StreamElement<unknown>) => void,
  recordInput?: (input: number) => (value: unknown) => void,
): () => void {
  const stops = inputs.map((upstream, input) =>
    subscribeTo(upstream, {
      next(element) {
        if (!output.closed) push(input, element);
      },
      nextRecord: recordInput?.(input),
      dropsAfterEnd: true,
      error: (error) => output.error(error),
      complete: () => {
        if (!output.closed) aligner.end(input);
      },
    }),
  );
  return () => stops.forEach((stop) => stop());
}

/**
 * What an aligner over several flows sends on, as one flow into `output`: records (with their timestamp set in
 * `record` when given), each barrier once aligned, a cancellation marker for an aborted alignment (reporting a
 * subsumed one through `decline`, so that the coordinator aborts it at once), the combined watermark and idleness,
 * and the end once every input ended. Shared by a source's parallel subtasks and a worker's input gates.
 */
export function alignedOutput(
  output: { next(element: unknown): void; complete(): void },
  decline: (id: number, by: number) => void,
  record?: RecordTimestamp,
): AlignerCallbacks {
  return {
    record: record
      ? (_input, value, timestamp) => {
          record.current = timestamp;
          output.next(value);
        }
      : (_input, value) => output.next(value),
    aligned: (barrier) => output.next(barrier),
    cancelled(id, reason, by) {
      if (reason === 'subsumed' && by !== undefined) decline(id, by);
      output.next(new CancelCheckpointMarker(id));
    },
    watermark: (timestamp) => output.next(new Watermark(timestamp)),
    idle: (idle) => output.next(idle ? WATERMARK_IDLE : WATERMARK_ACTIVE),
    complete: () => output.complete(),
  };
}
