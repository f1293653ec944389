// The two sides of the keyed-reduce bench, run in Node (bench/keyedReduce.ts) and in Chromium (bench/browser/page.ts):
// no node: imports here.
import { defer, from, scan } from 'rxjs';
import { createJob, forEach, fromArray, heapStateBackend, keyBy, reduce } from 'weir';
import { addEvents, type KeyedEvent } from './events';
import { noop, perSecond } from './sideBySide';

/**
 * weir: keyBy + reduce on the heap backend, checkpoints off, a no-op sink. Events per second. With `splits`, the
 * source is cut in that many index ranges, read by as many source subtasks on this one thread (the cost of merging them).
 */
export async function weirReduce(events: KeyedEvent[], splits?: number): Promise<number> {
  const start = performance.now();
  const job = createJob({ name: 'bench-keyed-reduce', stateBackend: heapStateBackend() });
  const source = splits === undefined ? fromArray(events) : fromArray(events, { splits });
  job.source(source, { uid: 'events', parallelism: splits ?? 1 }).pipe(keyBy((e) => e.key), reduce(addEvents, { uid: 'sum' }), forEach(noop));
  await job.start().done;
  return perSecond(events.length, performance.now() - start);
}

/** Plain RxJS: one scan over a Map of per-key sums, emitting the key's new sum for every event. Events per second. */
export function rxScan(events: KeyedEvent[]): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    defer(() => {
      const sums = new Map<string, KeyedEvent>();
      return from(events).pipe(
        scan((_: KeyedEvent | undefined, event: KeyedEvent) => {
          const current = sums.get(event.key);
          const next = current === undefined ? event : addEvents(current, event);
          sums.set(event.key, next);
          return next;
        }, undefined),
      );
    }).subscribe({ next: noop, error: reject, complete: () => resolve(perSecond(events.length, performance.now() - start)) });
  });
}
