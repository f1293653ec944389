import { Subject } from 'rxjs';
import { registerLeave, type Flow, type OutsideWeir } from '../core/flow.js';
import { sinkTo } from './sinkTo.js';

/**
 * Leaves weir: returns a plain RxJS Observable of the flow's records, to use with any RxJS operator. Records are
 * emitted as they arrive (at-least-once across restarts, like `forEach`); it completes when the job ends and
 * errors when the job fails for good.
 * Subscribe before starting the job: like a hot Observable, it does not replay what was emitted earlier.
 * @example
 * const totals$ = flow.pipe(keyBy((c) => c.user), reduce(add, { uid: 'sum' }), asObservable());
 * totals$.pipe(bufferCount(100)).subscribe(console.log);
 * job.start();
 */
export function asObservable<T>(options: { uid?: string } = {}): (input: Flow<T>) => OutsideWeir<T> {
  return (input) => {
    const subject = new Subject<T>();
    sinkTo<T>(
      {
        name: 'asObservable',
        open: () => ({
          write: (value) => subject.next(value),
          finish: () => undefined,
          abort: () => undefined,
        }),
        ended: (error) => (error === undefined ? subject.complete() : subject.error(error)),
      },
      options,
    )(input);
    return subject.asObservable();
  };
}

registerLeave((input) => asObservable()(input));
