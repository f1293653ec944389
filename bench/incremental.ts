import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createJob, forEach, fromAsyncIterable, heapStateBackend, keyBy, reduce, type CheckpointStats } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { loadCheckpoint } from '../src/checkpoint/loadCheckpoint';
import { DEFAULT_MAX_PARALLELISM } from '../src/core/keyGroups';
import { sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const KEYS = 1_000_000;
/** Keys changed between two checkpoints: 1%. */
const CHANGED = KEYS / 100;
const DELTAS = 10;

/** Every key once, then `DELTAS` rounds of 1% of the keys (spread over the key space), each ending at a pause. */
function phases(): KeyedEvent[][] {
  const all = [Array.from({ length: KEYS }, (_, i) => ({ key: `k${i}`, n: 1 }))];
  let seed = 0x1b873593;
  for (let round = 0; round < DELTAS; round++) {
    all.push(
      Array.from({ length: CHANGED }, () => {
        seed ^= seed << 13;
        seed ^= seed >>> 17;
        seed ^= seed << 5;
        return { key: `k${(seed >>> 0) % KEYS}`, n: 1 };
      }),
    );
  }
  return all;
}

/**
 * Runs a keyed sum over the phases with a checkpoint after each (incremental or not) into `dir`; returns the
 * checkpoints' stats, oldest first.
 */
async function checkpointEachPhase(dir: string, incremental: boolean): Promise<CheckpointStats[]> {
  const rounds = phases();
  let release!: () => void;
  let reached!: () => void;
  let arrived = new Promise<void>((resolve) => (reached = resolve));
  const job = createJob({
    name: 'incremental',
    stateBackend: heapStateBackend(),
    chunkSize: 4096,
    checkpoints: { storage: fsCheckpointStorage(dir), incremental, fullEvery: DELTAS + 1, retain: DELTAS + 1 },
  });
  const source = fromAsyncIterable<KeyedEvent>({
    async *[Symbol.asyncIterator]() {
      for (const round of rounds) {
        yield* round;
        const gate = new Promise<void>((resolve) => (release = resolve));
        reached();
        await gate;
      }
    },
  });
  job.source(source, { uid: 'events' }).pipe(keyBy((e) => e.key), reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }), forEach(() => undefined));
  const running = job.start();
  const stats: CheckpointStats[] = [];
  for (let i = 0; i < rounds.length; i++) {
    await arrived;
    arrived = new Promise<void>((resolve) => (reached = resolve));
    stats.push(await running.checkpoint());
    release();
  }
  await running.done;
  return stats;
}

/** Reads a checkpoint and restores its keyed state into a heap backend: milliseconds. */
async function restoreMs(dir: string, id: number): Promise<number> {
  const started = performance.now();
  const storage = fsCheckpointStorage(dir);
  const loaded = await loadCheckpoint(storage, `incremental/chk-${id}`, 'incremental');
  const backend = heapStateBackend().createKeyedBackend({ uid: 'sum', maxParallelism: DEFAULT_MAX_PARALLELISM, keyGroupRange: { start: 0, end: DEFAULT_MAX_PARALLELISM - 1 } });
  for await (const payload of loaded.states.get('sum')!.keyed()) backend.restore([payload]);
  if (backend.keyCount() !== KEYS) throw new Error(`restored ${backend.keyCount()} keys, expected ${KEYS}`);
  backend.dispose();
  return performance.now() - started;
}

/**
 * `incremental`: bytes an incremental checkpoint persists after 1% of 1M keys changed, against a full checkpoint of
 * the same state; and restoring a base plus 10 deltas against restoring one full checkpoint of the same state.
 */
export async function incremental(): Promise<Result[]> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-bench-incremental-'));
  try {
    const chained = await checkpointEachPhase(join(dir, 'incremental'), true);
    const full = await checkpointEachPhase(join(dir, 'full'), false);
    const last = chained.length;
    if (chained[last - 1]!.fullSize === chained[last - 1]!.bytes) throw new Error('the last incremental checkpoint was not a delta');
    const bytesRatio = chained[1]!.bytes / full[1]!.bytes;
    const best = await sideBySide({ chain: () => restoreMs(join(dir, 'incremental'), last), full: () => restoreMs(join(dir, 'full'), last) }, { rounds: 3, best: 'min' });
    return [
      { name: 'incremental/delta-bytes', value: chained[1]!.bytes, unit: 'bytes' },
      { name: 'incremental/full-bytes', value: full[1]!.bytes, unit: 'bytes' },
      { name: 'incremental/bytes-1pct-changed-vs-full', value: bytesRatio, unit: 'ratio', bar: { op: '<=', value: 0.03 } },
      { name: 'incremental/restore-chain-ms', value: best.chain, unit: 'ms' },
      { name: 'incremental/restore-full-ms', value: best.full, unit: 'ms' },
      { name: 'incremental/restore-chain-vs-full', value: best.chain / best.full, unit: 'ratio', bar: { op: '<=', value: 1.5 } },
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
