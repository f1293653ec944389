// What every Nexmark query of the bench provides: the same query three ways, and how to compare their results.
import type { Observable } from 'rxjs';
import type { CheckpointOptions, JobResult } from 'weir';
import type { NexmarkEvent } from './generator';

export interface NexmarkQuery<R> {
  /** `q1`, `q2`, …: the name in the results (`nexmark/q1-weir-vs-rx`). */
  readonly name: string;
  /** weir's public operators, event-time windows where the query has windows; `checkpoints` passed to `createJob`. */
  weir(events: readonly NexmarkEvent[], sink: (result: R) => void, checkpoints?: CheckpointOptions): Promise<JobResult>;
  /** Plain RxJS, the way a JS user writes it: `scan` over Maps, tracking the same watermark as weir. */
  rx(events: readonly NexmarkEvent[], sink: (result: R) => void): Promise<void>;
  /** A plain `for` loop over the events: the single-thread limit. */
  loop(events: readonly NexmarkEvent[], sink: (result: R) => void): void;
  /** A result as a canonical string: the three versions emit the same multiset of these (in any order). */
  canonical(result: R): string;
}

/** The size of Q7's and Q8's tumbling windows and of Q5's sliding ones (ms). */
export const WINDOW = 10_000;

/** Subscribes to `results` and resolves when it completes. */
export function drain<R>(results: Observable<R>, sink: (result: R) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    results.subscribe({ next: sink, error: reject, complete: resolve });
  });
}
