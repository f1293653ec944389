import { defer, from, groupBy, mergeMap, scan } from 'rxjs';
import { createJob, forEach, fromArray, heapStateBackend, keyBy, reduce } from 'weir';
import { makeEvents, noop, perSecond, sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const EVENTS = 5_000_000;
const KEYS = 10_000;

const add = (a: KeyedEvent, b: KeyedEvent): KeyedEvent => ({ key: a.key, n: a.n + b.n });

/** weir: keyBy + reduce on the heap backend, checkpoints off, a no-op sink. */
async function weirReduce(events: KeyedEvent[]): Promise<number> {
  const start = performance.now();
  const job = createJob({ name: 'bench-keyed-reduce', stateBackend: heapStateBackend() });
  job.source(fromArray(events), { uid: 'events' }).pipe(keyBy((e) => e.key), reduce(add, { uid: 'sum' }), forEach(noop));
  await job.start().done;
  return perSecond(events.length, performance.now() - start);
}

/** Plain RxJS: one scan over a Map of per-key sums, emitting the key's new sum for every event. */
function rxScan(events: KeyedEvent[]): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    defer(() => {
      const sums = new Map<string, KeyedEvent>();
      return from(events).pipe(
        scan((_: KeyedEvent | undefined, event: KeyedEvent) => {
          const current = sums.get(event.key);
          const next = current === undefined ? event : add(current, event);
          sums.set(event.key, next);
          return next;
        }, undefined),
      );
    }).subscribe({ next: noop, error: reject, complete: () => resolve(perSecond(events.length, performance.now() - start)) });
  });
}

/** Plain RxJS: groupBy key, a scan per group. */
function rxGroupBy(events: KeyedEvent[]): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    from(events)
      .pipe(
        groupBy((e) => e.key),
        mergeMap((group) => group.pipe(scan(add))),
      )
      .subscribe({ next: noop, error: reject, complete: () => resolve(perSecond(events.length, performance.now() - start)) });
  });
}

export async function keyedReduce(): Promise<Result[]> {
  const events = makeEvents(EVENTS, KEYS);
  const best = await sideBySide(
    { weir: () => weirReduce(events), scan: () => rxScan(events), groupBy: () => rxGroupBy(events) },
    { rounds: 3, best: 'max' },
  );
  return [
    { name: 'keyed-reduce/weir', value: best.weir, unit: 'events/s' },
    { name: 'keyed-reduce/rx-scan', value: best.scan, unit: 'events/s' },
    { name: 'keyed-reduce/rx-groupby', value: best.groupBy, unit: 'events/s' },
    { name: 'keyed-reduce/weir-vs-rx-scan', value: best.weir / best.scan, unit: 'ratio', bar: { op: '>=', value: 0.6 } },
    { name: 'keyed-reduce/weir-vs-rx-groupby', value: best.weir / best.groupBy, unit: 'ratio', bar: { op: '>=', value: 3 } },
  ];
}
