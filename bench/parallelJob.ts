// The job module of the `parallel` bench group (bench/parallel.ts): a keyed sum over a split array, with optional
// busy work per record, whose state is its output (no sink: nothing moves to worker 0 but barriers). Its settings
// come in WEIR_BENCH_PARALLEL, which each worker reads from its copy of the environment.
import { createJob, fromArray, keyBy, map, reduce } from '../src/index.js';
import { fsCheckpointStorage } from '../src/node/index.js';
import { DEFAULT_MAX_PARALLELISM, instanceOfKey } from '../src/core/keyGroups.js';

export interface ParallelSettings {
  /** `owned`: split k of 2 holds only keys of worker k's instances (none crosses); `shuffled`: keys in turn (half cross). */
  records: { count: number; keys: number; layout: 'owned' | 'shuffled' };
  /** Iterations of busy work per record (about 2 µs at 1500 on a 3 GHz core). */
  work: number;
  checkpoints?: { dir: string; interval: number };
}

/** Spins for `iterations` steps; the result is used, so the loop is not optimised away. */
function busy(value: number, iterations: number): number {
  let x = value;
  for (let i = 0; i < iterations; i++) x = (x * 1_103_515_245 + 12_345) | 0;
  return x;
}

/** The same records in every worker (each builds them): laid out for 2 workers; with 1, every key is its own anyway. */
function records({ count, keys, layout }: ParallelSettings['records']): { key: string; value: number }[] {
  const names = Array.from({ length: keys }, (_, i) => `key-${i}`);
  if (layout === 'shuffled') return Array.from({ length: count }, (_, i) => ({ key: names[i % keys]!, value: i }));
  const byWorker: string[][] = [[], []];
  for (const name of names) byWorker[instanceOfKey(name, 2, DEFAULT_MAX_PARALLELISM) % 2]!.push(name);
  const per = Math.floor(count / 2);
  return byWorker.flatMap((own, w) => Array.from({ length: per }, (_, i) => ({ key: own[i % own.length]!, value: w * per + i })));
}

export default function parallelJob({ workers }: { workers: number }) {
  const settings = JSON.parse(process.env.WEIR_BENCH_PARALLEL!) as ParallelSettings;
  const job = createJob({
    name: 'bench-parallel',
    ...(settings.checkpoints ? { checkpoints: { storage: fsCheckpointStorage(settings.checkpoints.dir), interval: settings.checkpoints.interval } } : {}),
  });
  const { work } = settings;
  job
    .source(fromArray(records(settings.records), { splits: workers }), { uid: 'records' })
    .pipe(
      map((record) => (work > 0 ? { key: record.key, value: record.value + (busy(record.value, work) & 1) } : record)),
      keyBy((record) => record.key),
      reduce((a, b) => ({ key: a.key, value: a.value + b.value }), { uid: 'sum' }),
    );
  return job;
}
