import { createJob, fromArray, mapAsync, memoryCheckpointStorage, sinkTo } from 'weir';
import { noop, perSecond, sideBySide } from './measure';
import type { Result } from './report';

// mapAsync over a fake service with a real 2 ms latency (a `setTimeout` promise) at capacity 100: the ideal is
// capacity ÷ latency = 50,000 records/s. Beside it, the plain-JS way: a hand-written pool of 100 promises over the
// same service, which shows what Node's timers give at all (a 2 ms timer fires after 2 ms or more).

const LATENCY_MS = 2;
const CAPACITY = 100;
const IDEAL = CAPACITY / (LATENCY_MS / 1000);

const service = (n: number): Promise<number> => new Promise((resolve) => setTimeout(() => resolve(n + 1), LATENCY_MS));

/** Records/s of `fromArray → mapAsync (unordered, capacity 100) → sink`, with checkpoints every `interval` ms or none. */
async function weirRun(records: readonly number[], interval: number | undefined): Promise<number> {
  const job = createJob({ name: 'bench-async', checkpoints: interval === undefined ? undefined : { storage: memoryCheckpointStorage(), interval } });
  job
    .source(fromArray(records), { uid: 'in' })
    .pipe(mapAsync(service, { uid: 'enrich', capacity: CAPACITY, ordered: false }), sinkTo({ name: 'drop', open: () => ({ write: noop, finish: noop, abort: noop }) }, { uid: 'out' }));
  const start = performance.now();
  await job.start().done;
  return perSecond(records.length, performance.now() - start);
}

/** Records/s of a pool of 100 promises over the same service: each worker takes the next record when its call returns. */
async function promisePool(records: readonly number[]): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < records.length) await service(records[next++]!);
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: CAPACITY }, worker));
  return perSecond(records.length, performance.now() - start);
}

export async function async(): Promise<Result[]> {
  const records = Array.from({ length: 100_000 }, (_, i) => i);
  const best = await sideBySide(
    {
      weir: () => weirRun(records, undefined),
      checkpointed: () => weirRun(records, 500),
      pool: () => promisePool(records),
    },
    { rounds: 4, best: 'max' },
  );
  const name = 'async/throughput-vs-capacity-over-latency';
  return [
    { name: `${name}/mapAsync`, value: best.weir, unit: 'records/s' },
    { name: `${name}/mapAsync-checkpointed`, value: best.checkpointed, unit: 'records/s' },
    { name: `${name}/promise-pool`, value: best.pool, unit: 'records/s' },
    { name, value: best.weir / IDEAL, unit: 'ratio', bar: { op: '>=', value: 0.8 } },
    { name: `${name}-checkpointed`, value: best.checkpointed / IDEAL, unit: 'ratio', bar: { op: '>=', value: 0.7 } },
    { name: `${name}-promise-pool`, value: best.pool / IDEAL, unit: 'ratio' },
    { name: 'async/mapAsync-vs-promise-pool', value: best.weir / best.pool, unit: 'ratio' },
  ];
}
