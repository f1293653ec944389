// The records and the busy work of the parallel benches, in Node (bench/parallelJob.ts) and in the browser
// (bench/browser/parallelJob.ts): platform-free, so both measure the same job.
import { DEFAULT_MAX_PARALLELISM, instanceOfKey } from '../src/core/keyGroups.js';
import { fromArray, fromGenerator, keyBy, map, reduce, type Job, type Source } from '../src/index.js';

export interface ParallelRecords {
  count: number;
  keys: number;
  /** `owned`: split k of 2 holds only keys of worker k's instances (none crosses); `shuffled`: keys in turn (half cross). */
  layout: 'owned' | 'shuffled';
  /**
   * `array` (default): every worker builds all records at import and reads its splits of them (`fromArray`);
   * `generator`: each worker makes only the records of its own splits (`fromGenerator`), as a load generator does.
   */
  input?: 'array' | 'generator';
}

/** Spins for `iterations` steps; the result is used, so the loop is not optimised away. */
export function busy(value: number, iterations: number): number {
  let x = value;
  for (let i = 0; i < iterations; i++) x = (x * 1_103_515_245 + 12_345) | 0;
  return x;
}

/** The record at `index` of `count` over `keys` keys, laid out for 2 workers; with 1, every key is its own anyway. */
function recordMaker({ count, keys, layout }: ParallelRecords): (index: number) => { key: string; value: number } {
  const names = Array.from({ length: keys }, (_, i) => `key-${i}`);
  if (layout === 'shuffled') return (i) => ({ key: names[i % keys]!, value: i });
  const byWorker: string[][] = [[], []];
  for (const name of names) byWorker[instanceOfKey(name, 2, DEFAULT_MAX_PARALLELISM) % 2]!.push(name);
  // Split k of 2 (an index range of `per`) holds only worker k's keys.
  const per = Math.floor(count / 2);
  return (i) => {
    const w = i < per ? 0 : 1;
    const own = byWorker[w]!;
    return { key: own[(i - w * per) % own.length]!, value: i };
  };
}

/** The records as a source cut into one split per worker (see `ParallelRecords.input`). */
function recordSource(data: ParallelRecords, workers: number): Source<{ key: string; value: number }> {
  const make = recordMaker(data);
  const count = data.layout === 'owned' ? Math.floor(data.count / 2) * 2 : data.count;
  if (data.input === 'generator') return fromGenerator(count, make, { splits: workers });
  return fromArray(Array.from({ length: count }, (_, i) => make(i)), { splits: workers });
}

/**
 * The benches' job graph, the same in Node and in the browser: `settings.records` in one split per worker, `work`
 * iterations of busy work per record, summed per key (the state is the output: no sink).
 */
export function addKeyedSum(job: Job, settings: { records: ParallelRecords; work: number }, workers: number): void {
  const { work } = settings;
  job
    .source(recordSource(settings.records, workers), { uid: 'records' })
    .pipe(
      map((record) => (work > 0 ? { key: record.key, value: record.value + (busy(record.value, work) & 1) } : record)),
      keyBy((record) => record.key),
      reduce((a, b) => ({ key: a.key, value: a.value + b.value }), { uid: 'sum' }),
    );
}
