import type { Observable, Subscription } from 'rxjs';
import type { Source } from '../core/types.js';

/**
 * A source over any RxJS Observable. An Observable cannot be rewound, so this source is not replayable: it is
 * subscribed once per job run and keeps its subscription across restarts; records it delivered after the last
 * checkpoint are lost when the job restarts (at-most-once for those), and a job cannot be restored from a persisted
 * checkpoint with it. Use a replayable source when you need exactly-once.
 * @example job.source(fromObservable(interval(100).pipe(map((i) => ({ user: `u${i % 3}` })))), { uid: 'ticks' })
 */
export function fromObservable<T>(observable: Observable<T>): Source<T> {
  const buffer: T[] = [];
  let completed = false;
  let failure: { error: unknown } | undefined;
  let subscription: Subscription | undefined;
  let notify: (() => void) | undefined;
  const wake = () => {
    notify?.();
    notify = undefined;
  };
  return {
    name: 'fromObservable',
    replayable: false,
    open() {
      subscription ??= observable.subscribe({
        next: (value) => {
          buffer.push(value);
          wake();
        },
        error: (error) => {
          failure = { error };
          wake();
        },
        complete: () => {
          completed = true;
          wake();
        },
      });
      let delivered = 0;
      const take = (max: number): T[] | null => {
        if (failure) throw failure.error;
        if (buffer.length === 0) return completed ? null : [];
        const chunk = buffer.splice(0, max);
        delivered += chunk.length;
        return chunk;
      };
      return {
        read(max) {
          const chunk = take(max);
          if (chunk === null || chunk.length > 0) return chunk;
          return new Promise<void>((resolve) => (notify = resolve)).then(() => take(max));
        },
        offset: () => delivered,
      };
    },
    ended() {
      subscription?.unsubscribe();
    },
  };
}
