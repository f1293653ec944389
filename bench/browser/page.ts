// The browser side of the `browser` bench group (bench/browser.ts serves this page with vite and drives it in
// Chromium): each function runs one side-by-side measurement in the page and returns plain numbers.
import { createStore, del, set } from 'idb-keyval';
import { createJob, forEach, heapStateBackend, keyBy, reduce, type CheckpointStats, type Source } from 'weir';
import { indexedDbCheckpointStorage } from 'weir/browser';
import { addEvents, makeEvents } from '../events';
import { rxScan, weirReduce } from '../keyedReduceSides';
import { sideBySide } from '../sideBySide';

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
 * Checkpointing `keys` keys of a keyed reduce to `indexedDbCheckpointStorage`, against one idb-keyval `set` of the
 * same serialized data: the bytes of every file of that checkpoint, concatenated into one Uint8Array, into a
 * database of its own. Milliseconds, each side's best of `rounds` after one warm-up, alternating.
 */
async function idbCheckpoint(keys: number, rounds: number): Promise<{ checkpointMs: number; statsMs: number; blobMs: number; bytes: number; files: number; operators: string }> {
  const stamp = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const storage = indexedDbCheckpointStorage({ dbName: `weir-bench-chk-${stamp}` });
  const blobs = createStore(`weir-bench-blob-${stamp}`, 'blobs');
  const events = makeEvents(keys, keys);
  let seen = 0;
  let allSeen!: () => void;
  const processed = new Promise<void>((resolve) => (allSeen = resolve));
  const { source, end } = holdingSource(events);
  const job = createJob({ name: 'bench-idb', stateBackend: heapStateBackend(), checkpoints: { storage, retain: 1 } });
  job.source(source, { uid: 'events' }).pipe(
    keyBy((e) => e.key),
    reduce(addEvents, { uid: 'sum' }),
    forEach(() => {
      if (++seen === events.length) allSeen();
    }),
  );
  const running = job.start();
  await processed;

  let last: CheckpointStats | undefined;
  let bestStatsMs = Number.POSITIVE_INFINITY;
  const checkpoint = async () => {
    const start = performance.now();
    last = await running.checkpoint();
    const ms = performance.now() - start;
    if (last.status !== 'completed') throw new Error(`checkpoint ${last.id} ${last.status}: ${last.reason}`);
    bestStatsMs = Math.min(bestStatsMs, last.durationMs);
    return ms;
  };
  // The data of the blob side: what the first checkpoint wrote, file by file, as one buffer.
  await checkpoint();
  const dir = last!.path;
  const names = await storage.list(dir);
  const parts = await Promise.all(names.map((name) => storage.read(`${dir}/${name}`)));
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  let blobRound = 0;
  const blob = async () => {
    const start = performance.now();
    await set(`checkpoint-${blobRound++}`, bytes, blobs);
    const ms = performance.now() - start;
    await del(`checkpoint-${blobRound - 1}`, blobs);
    return ms;
  };
  const best = await sideBySide({ checkpoint, blob }, { rounds, best: 'min', settle: settleHeap });
  end();
  await running.done;
  for (const name of [`weir-bench-chk-${stamp}`, `weir-bench-blob-${stamp}`]) indexedDB.deleteDatabase(name);
  // Where the time of the last checkpoint went, per operator instance: the capture at the barrier (sync) and the
  // materialising, encoding and writing after it (async).
  const operators = last!.operators.map((o) => `${o.uid}.${o.subtask} sync ${o.syncMs.toFixed(1)} ms, async ${o.asyncMs.toFixed(1)} ms, ${o.bytes} B`).join('; ');
  return { checkpointMs: best.checkpoint, statsMs: bestStatsMs, blobMs: best.blob, bytes: bytes.byteLength, files: names.length, operators };
}

const bench = { keyedReduce, idbCheckpoint, hasGc: gc !== undefined };
(globalThis as { weirBench?: typeof bench }).weirBench = bench;
export type BrowserBench = typeof bench;
