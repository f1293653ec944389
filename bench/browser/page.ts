// The browser side of the `browser` bench group (bench/browser.ts serves this page with vite and drives it in
// Chromium): each function runs one side-by-side measurement in the page and returns plain numbers.
import { createStore, del, set } from 'idb-keyval';
import { createJob, forEach, heapStateBackend, keyBy, reduce, type CheckpointStats, type CheckpointStorage, type Source } from 'weir';
import { indexedDbCheckpointStorage, startJob } from 'weir/browser';
import { addEvents, makeEvents, type KeyedEvent } from '../events';
import { rxScan, weirReduce } from '../keyedReduceSides';
import { sideBySide } from '../sideBySide';
import { parallelJob, type BrowserParallelSettings } from './parallelJob';

/** A full GC where Chromium runs with --js-flags=--expose-gc (bench/browser.ts passes it), else nothing. */
const gc = (globalThis as { gc?: () => void }).gc;
const settleHeap = () => {
  gc?.();
  gc?.();
};

/** Keyed reduce in the page: weir keyBy + reduce against an RxJS scan over a Map, events per second. */
async function keyedReduce(count: number, keys: number, rounds: number): Promise<{ weir: number; scan: number }> {
  const events = makeEvents(count, keys);
  return sideBySide({ weir: () => weirReduce(events), scan: () => rxScan(events) }, { rounds, best: 'max', settle: settleHeap });
}

/** A source of `records` that, once they are all read, stays open (so the job can checkpoint) until `end()`. */
function holdingSource<T>(records: readonly T[]): { source: Source<T>; end: () => void } {
  let end!: () => void;
  const ended = new Promise<null>((resolve) => (end = () => resolve(null)));
  const source: Source<T> = {
    name: `holding(${records.length} records)`,
    replayable: false,
    open() {
      let index = 0;
      return {
        read(max) {
          if (index >= records.length) return ended;
          const chunk = records.slice(index, index + max);
          index += chunk.length;
          return chunk;
        },
        offset: () => index,
      };
    },
  };
  return { source, end };
}

/**
 * A running job that has reduced `events` per key into its state and then holds (its source stays open), so that
 * `checkpoint()` checkpoints exactly that state to `storage`: milliseconds from the call to completion.
 */
async function checkpointingJob<E extends { key: string }>(storage: CheckpointStorage, events: readonly E[], reducer: (a: E, b: E) => E) {
  let seen = 0;
  let allSeen!: () => void;
  const processed = new Promise<void>((resolve) => (allSeen = resolve));
  const { source, end } = holdingSource(events);
  const job = createJob({ name: 'bench-idb', stateBackend: heapStateBackend(), checkpoints: { storage, retain: 1 } });
  job.source(source, { uid: 'events' }).pipe(
    keyBy((e) => e.key),
    reduce(reducer, { uid: 'sum' }),
    forEach(() => {
      if (++seen === events.length) allSeen();
    }),
  );
  const running = job.start();
  await processed;
  let last: CheckpointStats | undefined;
  return {
    async checkpoint(): Promise<number> {
      const start = performance.now();
      last = await running.checkpoint();
      const ms = performance.now() - start;
      if (last.status !== 'completed') throw new Error(`checkpoint ${last.id} ${last.status}: ${last.reason}`);
      return ms;
    },
    last: () => last!,
    async end(): Promise<void> {
      end();
      await running.done;
    },
  };
}

const stamp = () => `${Date.now()}-${Math.random().toString(36).slice(2)}`;

/**
 * Checkpointing `keys` keys of a keyed reduce to `indexedDbCheckpointStorage`, against one idb-keyval `set` of the
 * same serialized data: the bytes of every file of that checkpoint, concatenated into one Uint8Array, into a
 * database of its own. Beside them, the plain way of keeping the same state by hand: one `set` of the Map an RxJS
 * `scan` would hold (structured-cloned by IndexedDB). Milliseconds, each side's best of `rounds` after one warm-up,
 * alternating.
 */
async function idbCheckpoint(
  keys: number,
  rounds: number,
): Promise<{ checkpointMs: number; statsMs: number; blobMs: number; mapMs: number; bytes: number; files: number; operators: string }> {
  const id = stamp();
  const storage = indexedDbCheckpointStorage({ dbName: `weir-bench-chk-${id}` });
  const blobs = createStore(`weir-bench-blob-${id}`, 'blobs');
  const events = makeEvents(keys, keys);
  const job = await checkpointingJob(storage, events, addEvents);
  const sums = new Map<string, KeyedEvent>();
  for (const event of events) {
    const current = sums.get(event.key);
    sums.set(event.key, current === undefined ? event : addEvents(current, event));
  }
  let bestStatsMs = Number.POSITIVE_INFINITY;
  const checkpoint = async () => {
    const ms = await job.checkpoint();
    bestStatsMs = Math.min(bestStatsMs, job.last().durationMs);
    return ms;
  };
  // The data of the blob side: what the first checkpoint wrote, file by file, as one buffer.
  await checkpoint();
  const dir = job.last().path;
  const names = await storage.list(dir);
  const parts = await Promise.all(names.map((name) => storage.read(`${dir}/${name}`)));
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  // One `set` of `value`, timed, then removed so that every round writes into the same empty store.
  let round = 0;
  const timedSet = (value: unknown) => async () => {
    const key = `value-${round++}`;
    const start = performance.now();
    await set(key, value, blobs);
    const ms = performance.now() - start;
    await del(key, blobs);
    return ms;
  };
  const blob = timedSet(bytes);
  const map = timedSet(sums);
  const best = await sideBySide({ checkpoint, blob, map }, { rounds, best: 'min', settle: settleHeap });
  await job.end();
  for (const name of [`weir-bench-chk-${id}`, `weir-bench-blob-${id}`]) indexedDB.deleteDatabase(name);
  // Where the time of the last checkpoint went, per operator instance: the capture at the barrier (sync) and the
  // materialising, encoding and writing after it (async).
  const operators = job.last().operators.map((o) => `${o.uid}.${o.subtask} sync ${o.syncMs.toFixed(1)} ms, async ${o.asyncMs.toFixed(1)} ms, ${o.bytes} B`).join('; ');
  return { checkpointMs: best.checkpoint, statsMs: bestStatsMs, blobMs: best.blob, mapMs: best.map, bytes: bytes.byteLength, files: names.length, operators };
}

/** A user's visits so far: rich values (a Date, a Set, a bigint), which JSON cannot hold. */
interface Visits {
  readonly key: string;
  readonly last: Date;
  readonly pages: Set<string>;
  readonly count: bigint;
}

const mergeVisits = (a: Visits, b: Visits): Visits => ({
  key: a.key,
  last: a.last > b.last ? a.last : b.last,
  pages: new Set([...a.pages, ...b.pages]),
  count: a.count + b.count,
});

/**
 * Checkpointing `keys` keys of rich values to IndexedDB as weir does (the values set aside for IndexedDB to
 * structured-clone), against the same storage without that (every value encoded with superjson inside the file, as
 * on any other storage). Milliseconds, each side's best of `rounds`.
 */
async function idbRichCheckpoint(keys: number, rounds: number): Promise<{ cloneMs: number; superjsonMs: number }> {
  const events: Visits[] = makeEvents(keys, keys).map((e, i) => ({ key: e.key, last: new Date(1_700_000_000_000 + i), pages: new Set([`p${i % 13}`, `p${i % 7}`]), count: BigInt(e.n) }));
  const names = [`weir-bench-rich-${stamp()}`, `weir-bench-rich-${stamp()}`];
  const cloned = indexedDbCheckpointStorage({ dbName: names[0]! });
  const { writeStructured: _write, readStructured: _read, ...inline } = indexedDbCheckpointStorage({ dbName: names[1]! });
  const clone = await checkpointingJob(cloned, events, mergeVisits);
  const superjson = await checkpointingJob(inline, events, mergeVisits);
  const best = await sideBySide({ clone: () => clone.checkpoint(), superjson: () => superjson.checkpoint() }, { rounds, best: 'min', settle: settleHeap });
  await clone.end();
  await superjson.end();
  for (const name of names) indexedDB.deleteDatabase(name);
  return { cloneMs: best.clone, superjsonMs: best.superjson };
}

/**
 * The same keyed sum with owned splits on 2 module Web Workers and on 1 (weir/browser's `startJob`), records per
 * second of each side's best of `rounds`, spawn and final checkpoint included.
 */
async function parallelWorkers(count: number, keys: number, work: number, rounds: number): Promise<{ one: number; two: number }> {
  const settings: BrowserParallelSettings = { records: { count, keys, layout: 'owned' }, work };
  const worker = () => new Worker(new URL('./parallel.worker.ts', import.meta.url), { type: 'module', name: JSON.stringify(settings) });
  const run = async (workers: number) => {
    const started = performance.now();
    await startJob(parallelJob(settings), { workers, worker }).done;
    return count / ((performance.now() - started) / 1000);
  };
  return sideBySide({ one: () => run(1), two: () => run(2) }, { rounds, best: 'max', settle: settleHeap });
}

const bench = { keyedReduce, idbCheckpoint, idbRichCheckpoint, parallelWorkers, hasGc: gc !== undefined };
(globalThis as { weirBench?: typeof bench }).weirBench = bench;
export type BrowserBench = typeof bench;
