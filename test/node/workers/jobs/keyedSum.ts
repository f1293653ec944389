// A job module for the worker-thread tests: a keyed running sum over a split array, written by an exactly-once file
// sink. The test passes its settings in WEIR_TEST_JOB (workers get a copy of the environment when they spawn). It
// imports the engine from the sources by relative path, so that in a worker it is the engine the worker entry uses.
import { existsSync, writeFileSync } from 'node:fs';
import { createJob, fromArray, keyBy, map, memoryCheckpointStorage, reduce, type CheckpointStorage } from '../../../../src/index.js';
import { fsCheckpointStorage, toFile } from '../../../../src/node/index.js';

export interface KeyedSumSettings {
  name: string;
  out: string;
  records: number;
  keys: number;
  splits: number;
  /** A checkpoint directory; 'memory' for a memory storage; absent: no checkpointing. */
  checkpoints?: string;
  interval?: number;
  /** The first attempt fails at this record value: by a throw, or by process.exit(1) in the worker. */
  failAt?: { value: number; how: 'throw' | 'exit'; marker: string };
  /** Slows the source so that checkpoints and stops happen mid-input (a chunk of one record each time). */
  chunkSize?: number;
  parallelism?: number;
  /** Unaligned checkpoints after this alignment time (ms), which jobs on workers refuse. */
  alignedTimeout?: number;
  /** Incremental checkpoints: a checkpoint's files build on earlier checkpoints' files. */
  incremental?: boolean;
}

const memory = new Map<string, CheckpointStorage>();

export default function keyedSum() {
  const settings = JSON.parse(process.env.WEIR_TEST_JOB!) as KeyedSumSettings;
  const storage =
    settings.checkpoints === undefined
      ? undefined
      : settings.checkpoints === 'memory'
        ? (memory.get(settings.name) ?? memory.set(settings.name, memoryCheckpointStorage()).get(settings.name)!)
        : fsCheckpointStorage(settings.checkpoints);
  const job = createJob({
    name: settings.name,
    ...(storage ? { checkpoints: { storage, ...(settings.interval ? { interval: settings.interval } : {}), ...(settings.alignedTimeout !== undefined ? { alignedTimeout: settings.alignedTimeout } : {}), ...(settings.incremental ? { incremental: true } : {}) } } : {}),
    restart: { strategy: 'fixed-delay', attempts: 3, delay: 0 },
    ...(settings.chunkSize ? { chunkSize: settings.chunkSize } : {}),
    ...(settings.parallelism ? { parallelism: settings.parallelism } : {}),
  });
  const records = Array.from({ length: settings.records }, (_, i) => ({ key: `k${i % settings.keys}`, value: i }));
  const { failAt } = settings;
  job
    .source(fromArray(records, { splits: settings.splits }), { uid: 'records' })
    .pipe(
      map((record) => {
        if (failAt && record.value === failAt.value && !existsSync(failAt.marker)) {
          writeFileSync(failAt.marker, 'failed once');
          if (failAt.how === 'exit') process.exit(1);
          throw new Error(`failing once at ${record.value}`);
        }
        return record;
      }),
      keyBy((record) => record.key),
      reduce((a, b) => ({ key: a.key, value: a.value + b.value }), { uid: 'sum', queryable: 'sums' }),
      toFile(settings.out, { uid: 'out', format: (record) => `${record.key}=${record.value}` }),
    );
  return job;
}
