import type { OperatorFunction } from 'rxjs';
import { Flow } from '../../core/flow.js';

// How many `uncheckpointed` calls are applying their operator to a flow right now: RxJS operators lift themselves
// synchronously as they are applied, so the lifts made meanwhile are the wrapped operator's (a composed one, such as
// `first()`, lifts several).
let applying = 0;

/** Whether the RxJS operator being lifted onto a flow is wrapped in `uncheckpointed`. Internal. */
export function isUncheckpointed(): boolean {
  return applying > 0;
}

/**
 * Accepts that an RxJS operator keeps state in its closure that no checkpoint holds (`scan`, `bufferCount`,
 * `distinct`, `take`, `startWith`, rxjs `reduce`): its state restarts empty after every restore (a restored `take(3)`
 * takes three more records). It turns off, for the RxJS operators run with it, the development-mode check that fails
 * a job with `UncheckpointedStateError`. To keep such state exactly-once, use the weir operator instead: `fold` or
 * `reduce` for `scan`, `countWindow` for `bufferCount`, keyed state in `process` for `distinct` and `pairwise`.
 * Outside a weir pipeline it returns the operator unchanged.
 * @example
 * import { scan } from 'rxjs';
 * flow.pipe(uncheckpointed(scan((seen, _event) => seen + 1, 0))) // counts from 0 again after a restore
 */
export function uncheckpointed<T, R>(operator: OperatorFunction<T, R>): OperatorFunction<T, R> {
  return (source) => {
    if (!(source instanceof Flow)) return operator(source);
    applying++;
    try {
      return operator(source);
    } finally {
      applying--;
    }
  };
}
