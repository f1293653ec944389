import { from, groupBy, mergeMap, scan } from 'rxjs';
import { rxScan, weirReduce } from './keyedReduceSides';
import { addEvents, makeEvents, noop, perSecond, sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const EVENTS = 5_000_000;
const KEYS = 10_000;

/** Plain RxJS: groupBy key, a scan per group. */
function rxGroupBy(events: KeyedEvent[]): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    from(events)
      .pipe(
        groupBy((e) => e.key),
        mergeMap((group) => group.pipe(scan(addEvents))),
      )
      .subscribe({ next: noop, error: reject, complete: () => resolve(perSecond(events.length, performance.now() - start)) });
  });
}

export async function keyedReduce(): Promise<Result[]> {
  const events = makeEvents(EVENTS, KEYS);
  const best = await sideBySide(
    { weir: () => weirReduce(events), split: () => weirReduce(events, 2), scan: () => rxScan(events), groupBy: () => rxGroupBy(events) },
    { rounds: 3, best: 'max' },
  );
  return [
    { name: 'keyed-reduce/weir', value: best.weir, unit: 'events/s' },
    { name: 'keyed-reduce/rx-scan', value: best.scan, unit: 'events/s' },
    { name: 'keyed-reduce/rx-groupby', value: best.groupBy, unit: 'events/s' },
    { name: 'keyed-reduce/weir-vs-rx-scan', value: best.weir / best.scan, unit: 'ratio', bar: { op: '>=', value: 0.9 } },
    { name: 'keyed-reduce/weir-vs-rx-groupby', value: best.weir / best.groupBy, unit: 'ratio', bar: { op: '>=', value: 3 } },
    // Breakdown: the same job with its source in 2 splits read by 2 subtasks on this thread (their merge's cost).
    { name: 'keyed-reduce/weir-2-splits', value: best.split, unit: 'events/s' },
    { name: 'keyed-reduce/weir-2-splits-vs-weir', value: best.split / best.weir, unit: 'ratio' },
  ];
}
