// The records and the busy work of the parallel benches, in Node (bench/parallelJob.ts) and in the browser
// (bench/browser/parallelJob.ts): platform-free, so both measure the same job.
import { DEFAULT_MAX_PARALLELISM, instanceOfKey } from '../src/core/keyGroups.js';
import { fromArray, keyBy, map, reduce, type Job } from '../src/index.js';

export interface ParallelRecords {
  count: number;
  keys: number;
  /** `owned`: split k of 2 holds only keys of worker k's instances (none crosses); `shuffled`: keys in turn (half cross). */
  layout: 'owned' | 'shuffled';
}

/** Spins for `iterations` steps; the result is used, so the loop is not optimised away. */
export function busy(value: number, iterations: number): number {
  let x = value;
  for (let i = 0; i < iterations; i++) x = (x * 1_103_515_245 + 12_345) | 0;
  return x;
}

/** The same records in every worker (each builds them): laid out for 2 workers; with 1, every key is its own anyway. */
export function records({ count, keys, layout }: ParallelRecords): { key: string; value: number }[] {
  const names = Array.from({ length: keys }, (_, i) => `key-${i}`);
  if (layout === 'shuffled') return Array.from({ length: count }, (_, i) => ({ key: names[i % keys]!, value: i }));
  const byWorker: string[][] = [[], []];
  for (const name of names) byWorker[instanceOfKey(name, 2, DEFAULT_MAX_PARALLELISM) % 2]!.push(name);
  const per = Math.floor(count / 2);
  return byWorker.flatMap((own, w) => Array.from({ length: per }, (_, i) => ({ key: own[i % own.length]!, value: w * per + i })));
}

/**
 * The benches' job graph, the same in Node and in the browser: `settings.records` in one split per worker, `work`
 * iterations of busy work per record, summed per key (the state is the output: no sink).
 */
export function addKeyedSum(job: Job, settings: { records: ParallelRecords; work: number }, workers: number): void {
  const { work } = settings;
  job
    .source(fromArray(records(settings.records), { splits: workers }), { uid: 'records' })
    .pipe(
      map((record) => (work > 0 ? { key: record.key, value: record.value + (busy(record.value, work) & 1) } : record)),
      keyBy((record) => record.key),
      reduce((a, b) => ({ key: a.key, value: a.value + b.value }), { uid: 'sum' }),
    );
}
