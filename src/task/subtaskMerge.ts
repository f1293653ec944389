import type { Observable } from 'rxjs';
import type { StreamElement } from '../core/elements.js';
import type { CheckpointMode } from '../core/graph.js';
import type { Scheduler } from '../core/types.js';
import { BarrierAligner } from './barrierAligner.js';
import { alignedOutput, feedAligner } from './alignerInputs.js';
import { DirectObservable, endOnce } from './directObservable.js';

export interface SubtaskMergeOptions {
  readonly mode: CheckpointMode;
  readonly scheduler: Scheduler;
  /** A newer checkpoint overtook checkpoint `id` while the subtasks aligned: the coordinator aborts it at once. */
  decline(id: number, by: number): void;
}

/**
 * One flow out of the parallel subtasks of a source, as the operators after it would read their input channels:
 * barrier n goes on once every subtask sent it (each saved its own splits' offsets just before), and in exactly-once
 * mode a subtask's records after its barrier wait until then, so the cut stays consistent. Watermarks are combined
 * by minimum; a subtask that ended its splits (or had none) sent the end-of-input watermark and holds no one back.
 * Alignment here never goes unaligned: the subtasks share one event loop and send a barrier at their next chunk.
 */
export function mergeSubtasks(subtasks: readonly Observable<StreamElement<unknown>>[], options: SubtaskMergeOptions): Observable<StreamElement<unknown>> {
  return new DirectObservable<StreamElement<unknown>>((observer) => {
    const subscriber = endOnce(observer);
    const aligner = new BarrierAligner(
      subtasks.length,
      options.mode,
      alignedOutput(subscriber, (id, by) => options.decline(id, by)),
      options.scheduler,
      undefined,
    );
    const stop = feedAligner(subtasks, aligner, subscriber, (input, element) => aligner.push(input, element, undefined));
    return () => {
      subscriber.closed = true;
      stop();
      aligner.dispose();
    };
  });
}
