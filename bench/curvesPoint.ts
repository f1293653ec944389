import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createJob, forEach, fromIterable, heapStateBackend, keyBy, reduce, type CheckpointStats, type Source } from 'weir';
import { fsCheckpointStorage, lmdbStateBackend } from 'weir/node';
import { addEvents, type KeyedEvent } from './events';

/**
 * One point of `npm run bench -- curves`, in a child process of its own (bench/curves.ts starts it with a heap limit,
 * so that a size the heap backend cannot hold ends this process, not the bench):
 *
 *     curvesPoint.ts throughput <heap|lmdb> <keys> <events>   → {"eventsPerS": …}
 *     curvesPoint.ts checkpoint <keys>                        → {"fullMs", "fullBytes", "deltaMs", "deltaBytes", "restoreMs"}
 *
 * prints one JSON line on stdout.
 */
const [kind, ...args] = process.argv.slice(2);

/** `count` events: every one of `keys` keys once in order, then keys drawn uniformly (xorshift32); made as read. */
function* events(keys: number, count: number): Generator<KeyedEvent> {
  let seed = 0x9e3779b9;
  for (let i = 0; i < count; i++) {
    if (i < keys) {
      yield { key: `k${i}`, n: 1 };
      continue;
    }
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    yield { key: `k${(seed >>> 0) % keys}`, n: i & 15 };
  }
}

/** Events per second of a keyed reduce over `keys` keys on the given backend, checkpoints off. */
async function throughput(backend: string, keys: number, count: number): Promise<{ eventsPerS: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-curves-'));
  try {
    const stateBackend = backend === 'lmdb' ? lmdbStateBackend({ path: dir }) : heapStateBackend();
    const job = createJob({ name: 'curves-throughput', stateBackend });
    job.source(fromIterable(events(keys, count)), { uid: 'events' }).pipe(keyBy((e) => e.key), reduce(addEvents, { uid: 'sum' }), forEach(() => undefined));
    const start = performance.now();
    await job.start().done;
    return { eventsPerS: (count / (performance.now() - start)) * 1000 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A keyed sum over `keys` keys (heap backend, fs checkpoints, incremental on): a full checkpoint once every key is in
 * the state, then a delta after 1% of the keys changed; then a new job's restore of the full checkpoint alone.
 */
async function checkpoint(keys: number): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-curves-'));
  try {
    const changed = Math.max(1, Math.round(keys / 100));
    const rounds = [Array.from(events(keys, keys)), Array.from({ length: changed }, (_, i) => ({ key: `k${(i * 7919) % keys}`, n: 1 }))];
    // The source holds after each round until it was checkpointed; a round is in the state once the sink saw all of it.
    let release!: () => void;
    let seen = 0;
    let target = 0;
    let processed!: () => void;
    const source: Source<KeyedEvent> = {
      name: 'curves-rounds',
      replayable: false,
      open() {
        let round = 0;
        let index = 0;
        let offset = 0;
        const read = (max: number): KeyedEvent[] | null | Promise<KeyedEvent[] | null> => {
          const records = rounds[round];
          if (records === undefined) return null;
          if (index < records.length) {
            const chunk = records.slice(index, index + max);
            index += chunk.length;
            offset += chunk.length;
            return chunk;
          }
          return new Promise((resolve) => {
            release = () => {
              round++;
              index = 0;
              resolve(read(max));
            };
          });
        };
        return { read, offset: () => offset };
      },
    };
    const storage = fsCheckpointStorage(dir);
    const job = createJob({ name: 'curves', stateBackend: heapStateBackend(), checkpoints: { storage, incremental: true, retain: 3 } });
    job.source(source, { uid: 'events' }).pipe(
      keyBy((e) => e.key),
      reduce(addEvents, { uid: 'sum' }),
      forEach(() => {
        if (++seen === target) processed();
      }),
    );
    const running = job.start();
    const stats: CheckpointStats[] = [];
    for (const round of rounds) {
      const done = new Promise<void>((resolve) => (processed = resolve));
      target += round.length;
      if (seen === target) processed();
      await done;
      stats.push(await running.checkpoint());
      release();
    }
    await running.done;
    const [full, delta] = stats as [CheckpointStats, CheckpointStats];
    if (full.status !== 'completed' || delta.status !== 'completed') throw new Error(`checkpoints ${full.status} / ${delta.status}`);
    // The restored job reads nothing: its time is the restore's, plus starting and ending a job.
    const restored = createJob({ name: 'curves', checkpoints: { storage } });
    restored.source(fromIterable<KeyedEvent>([]), { uid: 'events' }).pipe(keyBy((e) => e.key), reduce(addEvents, { uid: 'sum' }), forEach(() => undefined));
    const start = performance.now();
    const { restoredFrom } = await restored.start({ restore: full.path }).done;
    const restoreMs = performance.now() - start;
    if (restoredFrom === undefined) throw new Error(`the job did not restore ${full.path}`);
    return { fullMs: full.durationMs, fullBytes: full.bytes, deltaMs: delta.durationMs, deltaBytes: delta.bytes, restoreMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const result = kind === 'throughput' ? await throughput(args[0]!, Number(args[1]), Number(args[2])) : await checkpoint(Number(args[0]));
console.log(JSON.stringify(result));
