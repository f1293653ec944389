import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance as perfHooks } from 'node:perf_hooks';
import { createJob, createSavepoint, forEach, heapStateBackend, keyBy, keyGroupRangeFor, readSavepoint, reduce, valueState, type KeyedStatePayload, type Source } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const KEYS = 1_000_000;

/**
 * Savepoints of 1M keys at parallelism 4, against the same baseline as the snapshot bars (`JSON.stringify` of the
 * entries + `fs.writeFile`; `fs.readFile` + `JSON.parse`): a running job's `running.savepoint()` (the bar: barrier,
 * chunked state files, fsyncs, `_metadata`), writing one from data with the State Processor API (recorded), reading
 * every `[key, value]` back with `readSavepoint`, and rescaling 4 → 2 (every file to every new instance, each keeping
 * its key groups, as a job's restore does) against a plain restore of the same savepoint at parallelism 4.
 */
export async function savepoint(): Promise<Result[]> {
  const entries: [string, KeyedEvent][] = Array.from({ length: KEYS }, (_, i) => [`k${i}`, { key: `k${i}`, n: i & 1023 }]);
  const dir = await mkdtemp(join(tmpdir(), 'weir-bench-savepoint-'));
  const storage = fsCheckpointStorage(dir);
  const jsonFile = join(dir, 'plain.json');
  const descriptor = valueState<KeyedEvent>('reduce');

  /** The JSON baseline, in its two parts: `JSON.stringify`, then `fs.writeFile`; the parts of its fastest run are kept. */
  const jsonParts = { stringify: 0, write: Number.POSITIVE_INFINITY };
  const json = async () => {
    const start = performance.now();
    const text = JSON.stringify(entries);
    const stringified = performance.now();
    await writeFile(jsonFile, text);
    const end = performance.now();
    if (end - start < jsonParts.stringify + jsonParts.write) Object.assign(jsonParts, { stringify: stringified - start, write: end - stringified });
    return end - start;
  };
  /** Times `write` against the baseline: the same entries through `JSON.stringify` and `fs.writeFile`. */
  const againstJson = (write: () => Promise<unknown>) => sideBySide({ weir: () => timed(write), json }, { rounds: 3, best: 'min' });

  const running = await jobHolding(entries, storage);
  // Where a job's savepoint spends its time, in its fastest run: the share of it the job's thread was busy (the rest
  // is waiting: fsyncs, a timer), and the longest persisting of one operator instance (materialise, encode, write).
  const savepointParts = { ms: Number.POSITIVE_INFINITY, busy: 0, slowestAsyncMs: 0 };
  const write = await againstJson(async () => {
    const start = performance.now();
    const utilization = perfHooks.eventLoopUtilization();
    const stats = await running.savepoint({ path: 'job-savepoints' });
    const ms = performance.now() - start;
    if (ms < savepointParts.ms) {
      const slowestAsyncMs = Math.max(...stats.operators.map((operator) => operator.asyncMs));
      Object.assign(savepointParts, { ms, busy: perfHooks.eventLoopUtilization(utilization).utilization, slowestAsyncMs });
    }
  });
  const writeParts = { ...jsonParts };
  await running.finish();
  const bootstrap = await againstJson(() =>
    createSavepoint({ job: 'bench' }).withKeyedState('sum', descriptor, entries, { parallelism: 4 }).write(storage, 'sp'),
  );

  const read = await sideBySide(
    {
      weir: async () => {
        const start = performance.now();
        let count = 0;
        for await (const _ of (await readSavepoint(storage, 'sp')).keyedState('sum', 'reduce')) count++;
        if (count !== KEYS) throw new Error(`savepoint read benchmark: read ${count} keys`);
        return performance.now() - start;
      },
      json: async () => {
        const start = performance.now();
        const parsed = JSON.parse(await readFile(jsonFile, 'utf8')) as unknown[];
        if (parsed.length !== KEYS) throw new Error('savepoint read benchmark: wrong key count');
        return performance.now() - start;
      },
    },
    { rounds: 3, best: 'min' },
  );

  /** Restores the savepoint into `parallelism` heap backends, as a job's restore does, and reads one key. */
  const restoreAt = async (parallelism: number) => {
    const start = performance.now();
    const backends = Array.from({ length: parallelism }, (_, i) =>
      heapStateBackend().createKeyedBackend({ uid: 'sum', maxParallelism: 128, keyGroupRange: keyGroupRangeFor(i, parallelism, 128) }),
    );
    for await (const payload of (await readSavepoint(storage, 'sp')).keyedPayloads('sum')) {
      for (const backend of backends) backend.restore([payload as KeyedStatePayload]);
    }
    for (const backend of backends) backend.getState(descriptor);
    const elapsed = performance.now() - start;
    if (backends.reduce((sum, backend) => sum + backend.keyCount(), 0) !== KEYS) throw new Error('rescale benchmark: keys lost');
    return elapsed;
  };
  const rescale = await sideBySide({ weir: () => restoreAt(2), json: () => restoreAt(4) }, { rounds: 3, best: 'min' });
  await rm(dir, { recursive: true, force: true });
  return [
    { name: 'savepoint/write-1M/weir', value: write.weir, unit: 'ms' },
    { name: 'savepoint/write-1M/json', value: write.json, unit: 'ms' },
    { name: 'savepoint/write-1M/json-stringify', value: writeParts.stringify, unit: 'ms' },
    { name: 'savepoint/write-1M/json-write-file', value: writeParts.write, unit: 'ms' },
    { name: 'savepoint/write-1M/weir-thread-busy', value: savepointParts.busy, unit: 'ratio' },
    { name: 'savepoint/write-1M/weir-slowest-operator-async', value: savepointParts.slowestAsyncMs, unit: 'ms' },
    { name: 'savepoint/bootstrap-write-1M/weir', value: bootstrap.weir, unit: 'ms' },
    { name: 'savepoint/bootstrap-write-vs-json', value: bootstrap.weir / bootstrap.json, unit: 'ratio' },
    { name: 'savepoint/read-1M/weir', value: read.weir, unit: 'ms' },
    { name: 'savepoint/read-1M/json', value: read.json, unit: 'ms' },
    { name: 'rescale/1M-keys-4-to-2/ms', value: rescale.weir, unit: 'ms' },
    { name: 'rescale/1M-keys-plain-restore/ms', value: rescale.json, unit: 'ms' },
    { name: 'savepoint/write-vs-json', value: write.weir / write.json, unit: 'ratio', bar: { op: '<=', value: 1.5 } },
    { name: 'savepoint/read-vs-json', value: read.weir / read.json, unit: 'ratio', bar: { op: '<=', value: 1.5 } },
    { name: 'rescale/1M-keys-4-to-2', value: rescale.weir / rescale.json, unit: 'ratio', bar: { op: '<=', value: 1.5 } },
  ];
}

/**
 * A job at parallelism 4 whose keyed reduce holds one value for each of the entries' keys, kept running (its source
 * waits at the end of the entries) until `finish()`.
 */
async function jobHolding(entries: [string, KeyedEvent][], storage: ReturnType<typeof fsCheckpointStorage>) {
  let release!: () => void;
  const hold = new Promise<null>((resolve) => (release = () => resolve(null)));
  const source: Source<KeyedEvent> = {
    name: 'bench entries',
    replayable: true,
    open() {
      let next = 0;
      return {
        read(max) {
          if (next >= entries.length) return hold;
          const chunk = entries.slice(next, next + max).map(([, value]) => value);
          next += chunk.length;
          return chunk;
        },
        offset: () => next,
      };
    },
  };
  let processed = 0;
  const job = createJob({ name: 'bench-savepoint', checkpoints: { storage }, parallelism: 4, chunkSize: 8192 });
  job.source(source, { uid: 'entries' }).pipe(
    keyBy((event) => event.key),
    reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'sum' }),
    forEach(() => void processed++),
  );
  const running = job.start();
  while (processed < entries.length) await new Promise((resolve) => setImmediate(resolve));
  return {
    savepoint: (options: { path: string }) => running.savepoint(options),
    finish: async () => {
      release();
      await running.done;
    },
  };
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}
