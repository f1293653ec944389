// The job module of the `parallel` bench group (bench/parallel.ts): a keyed sum over a split array, with optional
// busy work per record, whose state is its output (no sink: nothing moves to worker 0 but barriers). Its settings
// come in WEIR_BENCH_PARALLEL, which each worker reads from its copy of the environment.
import { createJob } from '../src/index.js';
import { fsCheckpointStorage } from '../src/node/index.js';
import { addKeyedSum, type ParallelRecords } from './parallelRecords.js';

export interface ParallelSettings {
  records: ParallelRecords;
  /** Iterations of busy work per record (about 2 µs at 1500 on a 3 GHz core). */
  work: number;
  checkpoints?: { dir: string; interval: number };
}

export default function parallelJob({ workers }: { workers: number }) {
  const settings = JSON.parse(process.env.WEIR_BENCH_PARALLEL!) as ParallelSettings;
  const job = createJob({
    name: 'bench-parallel',
    ...(settings.checkpoints ? { checkpoints: { storage: fsCheckpointStorage(settings.checkpoints.dir), interval: settings.checkpoints.interval } } : {}),
  });
  addKeyedSum(job, settings, workers);
  return job;
}
