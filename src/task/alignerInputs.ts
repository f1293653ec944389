import type { Observable } from 'rxjs';
import type { StreamElement } from '../core/elements.js';
import type { BarrierAligner } from './barrierAligner.js';
import { subscribeTo } from './directObservable.js';

/**
 * Feeds each of `inputs` into `aligner` as its input channel of the same index, until `output` closes: elements go
 * through `push` (so a caller can guard it or pass the record's timestamp), an input's end ends its channel, and any
 * input's error errors `output`. Returns what stops reading them all. Shared by every place that aligns barriers over
 * several flows (a multi-input operator, a source's parallel subtasks).
 */
export function feedAligner(
  inputs: readonly Observable<StreamElement<unknown>>[],
  aligner: Pick<BarrierAligner, 'end'>,
  output: { readonly closed: boolean; error(error: unknown): void },
  push: (input: number, element: StreamElement<unknown>) => void,
): () => void {
  const stops = inputs.map((upstream, input) =>
    subscribeTo(upstream, {
      next(element) {
        if (!output.closed) push(input, element);
      },
      dropsAfterEnd: true,
      error: (error) => output.error(error),
      complete: () => {
        if (!output.closed) aligner.end(input);
      },
    }),
  );
  return () => stops.forEach((stop) => stop());
}
