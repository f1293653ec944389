// A windowed job module for the worker-thread tests: per-key sums in tumbling event-time windows over a split array,
// written to the file named in WEIR_TEST_JOB. The watermark lags by more than the input spans, so no record is late
// in any interleaving of the splits, and the windows' sums are the same on one thread and on any number of workers.
import { assignTimestamps, createJob, fromArray, keyBy, reduce, tumbling, window } from '../../../../src/index.js';
import { toFile } from '../../../../src/node/index.js';

export function windowed() {
  const { name, out } = JSON.parse(process.env.WEIR_TEST_JOB!) as { name: string; out: string };
  const job = createJob({ name });
  const records = Array.from({ length: 3000 }, (_, i) => ({ key: `k${i % 13}`, at: i * 10, value: i }));
  job
    .source(fromArray(records, { splits: 3 }), { uid: 'records' })
    .pipe(
      assignTimestamps((record) => record.at, { outOfOrderness: 40_000 }),
      keyBy((record) => record.key),
      window(tumbling(1_000)),
      reduce((a, b) => ({ ...a, value: a.value + b.value }), { uid: 'per-second' }),
      toFile(out, { uid: 'out', format: (record) => `${record.key}@${Math.floor(record.at / 1_000)}=${record.value}` }),
    );
  return job;
}

/**
 * The same windows with the watermarks generated at the source, per split (`job.source(src, { watermarks })`): no
 * unkeyed `assignTimestamps` that would run in worker 0 and draw every record there, so the job stays spread over the
 * workers. Each split's records come in event-time order, so watermarks without out-of-orderness make no record late
 * unless the subtasks' and channels' watermarks were merged wrongly (a late record is dropped, so a sum would differ).
 */
export function windowedAtSource() {
  const { name, out } = JSON.parse(process.env.WEIR_TEST_JOB!) as { name: string; out: string };
  const job = createJob({ name });
  const records = Array.from({ length: 3000 }, (_, i) => ({ key: `k${i % 13}`, at: i * 10, value: i }));
  job
    .source(fromArray(records, { splits: 3 }), { uid: 'records', watermarks: { timestamp: (record) => record.at, outOfOrderness: 0, interval: 0 } })
    .pipe(
      keyBy((record) => record.key),
      window(tumbling(1_000)),
      reduce((a, b) => ({ ...a, value: a.value + b.value }), { uid: 'per-second' }),
      toFile(out, { uid: 'out', format: (record) => `${record.key}@${Math.floor(record.at / 1_000)}=${record.value}` }),
    );
  return job;
}
