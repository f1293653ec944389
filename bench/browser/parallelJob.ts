// The job of `browser/parallel-2-vs-1-workers` (the browser's twin of bench/parallelJob.ts): a keyed sum over a
// split array with busy work per record, whose state is its output. Its settings come in the worker's name.
import { createJob, fromArray, keyBy, map, reduce } from 'weir';
import type { JobModuleContext } from 'weir/browser';
import { busy, records, type ParallelRecords } from '../parallelRecords';

export interface BrowserParallelSettings {
  records: ParallelRecords;
  /** Iterations of busy work per record (about 2 µs at 1500 on a 3 GHz core). */
  work: number;
}

export function parallelJob(settings: BrowserParallelSettings) {
  return ({ workers }: JobModuleContext) => {
    const job = createJob({ name: 'bench-browser-parallel' });
    const { work } = settings;
    job
      .source(fromArray(records(settings.records), { splits: workers }), { uid: 'records' })
      .pipe(
        map((record) => (work > 0 ? { key: record.key, value: record.value + (busy(record.value, work) & 1) } : record)),
        keyBy((record) => record.key),
        reduce((a, b) => ({ key: a.key, value: a.value + b.value }), { uid: 'sum' }),
      );
    return job;
  };
}
