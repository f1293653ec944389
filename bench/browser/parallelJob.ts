// The job of `browser/parallel-2-vs-1-workers` (the browser's twin of bench/parallelJob.ts): a keyed sum over a
// split array with busy work per record, whose state is its output. Its settings come in the worker's name.
import { createJob } from 'weir';
import type { JobModuleContext } from 'weir/browser';
import { addKeyedSum, type ParallelRecords } from '../parallelRecords';

export interface BrowserParallelSettings {
  records: ParallelRecords;
  /** Iterations of busy work per record (about 2 µs at 1500 on a 3 GHz core). */
  work: number;
}

export function parallelJob(settings: BrowserParallelSettings) {
  return ({ workers }: JobModuleContext) => {
    const job = createJob({ name: 'bench-browser-parallel' });
    addKeyedSum(job, settings, workers);
    return job;
  };
}
