import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CheckpointCorruptedError,
  collect,
  createJob,
  heapStateBackend,
  keyBy,
  process,
  valueState,
  type CheckpointStats,
  type StateBackend,
} from 'weir';
import { fsCheckpointStorage, lmdbStateBackend } from 'weir/node';
import { pausableSource } from './fixtures';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-incremental-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `add` adds `n` to the key's total, `del` clears it, `get` emits `[key, total]`. */
interface Op {
  key: string;
  op: 'add' | 'del' | 'get';
  n: number;
}

const KEYS = 200;
const adds = (keys: number[], n: number): Op[] => keys.map((k) => ({ key: `k${k}`, op: 'add', n }));
const dels = (keys: number[]): Op[] => keys.map((k) => ({ key: `k${k}`, op: 'del', n: 0 }));
/** Phases between checkpoints: every key, then a few changes and removals per phase. */
const phases: Op[][] = [
  adds(Array.from({ length: KEYS }, (_, k) => k), 1),
  [...adds([1, 2, 3, 4, 5], 10), ...dels([6, 7, 8])],
  [...adds([1, 9], 100), ...dels([2]), ...adds([6], 1000)],
  [...adds([10, 11], 5), ...dels([9])],
  [...adds([12], 7), ...dels([1])],
];
const gets: Op[] = Array.from({ length: KEYS }, (_, k) => ({ key: `k${k}`, op: 'get', n: 0 }));

/** What `get` emits after `phases[0..upTo]`: the model the restored state is checked against. */
function expected(upTo: number): [string, number | null][] {
  const totals = new Map<string, number>();
  for (const op of phases.slice(0, upTo + 1).flat()) {
    if (op.op === 'add') totals.set(op.key, (totals.get(op.key) ?? 0) + op.n);
    else totals.delete(op.key);
  }
  return gets.map(({ key }) => [key, totals.get(key) ?? null]);
}

function totalsJob(stateBackend: StateBackend, records: Op[], pauseAt: number[], checkpoints: { retain?: number; fullEvery?: number } = {}) {
  const paused = pausableSource(records, pauseAt);
  const job = createJob({
    name: 'totals',
    stateBackend,
    chunkSize: 16,
    checkpoints: { storage: fsCheckpointStorage(dir), incremental: true, retain: 10, ...checkpoints },
  });
  const total = valueState<number>('total');
  const out = collect<[string, number | null]>();
  job
    .source(paused.source, { uid: 'in' })
    .pipe(
      keyBy((op: Op) => op.key),
      process<Op, [string, number | null]>(
        {
          onElement(op, ctx, emit) {
            const state = ctx.state(total);
            if (op.op === 'add') state.update((state.value() ?? 0) + op.n);
            else if (op.op === 'del') state.clear();
            else emit.emit([op.key, state.value() ?? null]);
          },
        },
        { uid: 'totals' },
      ),
    )
    .pipe(out.sink({ uid: 'out' }));
  return { job, out, paused };
}

/** Runs the phases with a checkpoint after each, then cancels; returns the checkpoints' stats. */
async function checkpointPhases(stateBackend: StateBackend, checkpoints: { retain?: number; fullEvery?: number } = {}): Promise<CheckpointStats[]> {
  const records = phases.flat();
  const ends = phases.map((_, i) => phases.slice(0, i + 1).flat().length);
  const { job, paused } = totalsJob(stateBackend, records, ends.slice(0, -1), checkpoints);
  const running = job.start();
  const stats: CheckpointStats[] = [];
  for (const end of ends.slice(0, -1)) {
    await paused.reached(end);
    stats.push(await running.checkpoint());
    paused.release(end);
  }
  stats.push(...[await running.done].flatMap((result) => result.checkpoints.slice(-1)));
  return stats;
}

async function restoreAndGet(stateBackend: StateBackend, restore: 'latest' | string) {
  const { job, out } = totalsJob(stateBackend, [...phases.flat(), ...gets], []);
  const result = await job.start({ restore }).done;
  return { result, values: out.values };
}

const metadataOf = async (id: number) =>
  JSON.parse((await readFile(join(dir, 'totals', `chk-${id}`, '_metadata'), 'utf8')).split('\n')[1]!) as {
    operators: { uid: string; files: { file: string; checkpoint?: number; bytes: number }[] }[];
  };

const backends: [string, () => StateBackend][] = [
  ['heap', () => heapStateBackend()],
  ['lmdb', () => lmdbStateBackend({ path: join(dir, 'lmdb-work') })],
];

describe.each(backends)('incremental checkpoints on the %s backend', (_name, backend) => {
  it('persist only what changed, reference the earlier files, and restore base + deltas in order', async () => {
    const stats = await checkpointPhases(backend());
    expect(stats.map((s) => s.id)).toEqual([1, 2, 3, 4, 5]);
    const [full, ...deltas] = stats;
    const keyedBytes = (stats: CheckpointStats) => stats.operators.find((operator) => operator.uid === 'totals')!.bytes;
    for (const delta of deltas) {
      // The operator's state file holds its few changed keys; metadata, offsets and sink state are the same size.
      // (A heap full snapshot is unbucketed and flat, without per-key-group or per-entry wrappers: much smaller than a
      // delta of the same keys, so the few changes of a phase weigh about a quarter of all 200 keys.)
      expect(keyedBytes(delta)).toBeLessThan(keyedBytes(full!) / 3);
      expect(delta.bytes).toBeLessThan(full!.bytes);
      expect(delta.fullSize).toBeGreaterThan(delta.bytes);
    }
    expect(full!.fullSize).toBe(full!.bytes);
    const totals = (await metadataOf(5)).operators.find((o) => o.uid === 'totals')!;
    expect(new Set(totals.files.map((f) => f.checkpoint))).toEqual(new Set([undefined, 1, 2, 3, 4]));
    // Other operators' (source, sink) state is never shared.
    for (const operator of (await metadataOf(5)).operators.filter((o) => o.uid !== 'totals')) expect(operator.files.every((f) => f.checkpoint === undefined)).toBe(true);

    // The final checkpoint (5) came after every phase: the restored job's gets see all of them.
    const { result, values } = await restoreAndGet(backend(), 'latest');
    expect(result.restoredFrom).toBe('totals/chk-5');
    expect(values).toEqual(expected(4));
    // An earlier checkpoint of the chain restores to its own point, and replaying from its offset ends the same.
    const earlier = await restoreAndGet(backend(), 'totals/chk-3');
    expect(earlier.values).toEqual(expected(4));
  });

  it('takes a full checkpoint every fullEvery checkpoints, and retention keeps exactly the files retained checkpoints reference', async () => {
    const stats = await checkpointPhases(backend(), { fullEvery: 3, retain: 1 });
    // Chains: 1 (full) ← 2 ← 3, then 4 (full) ← 5.
    expect(stats.map((s) => s.fullSize === s.bytes)).toEqual([true, false, false, true, false]);
    const dirs = (await readdir(join(dir, 'totals'))).filter((name) => name.startsWith('chk-')).sort();
    expect(dirs).toEqual(['chk-4', 'chk-5']);
    // chk-4 is no longer a checkpoint (retain 1) but chk-5 references its keyed files: they stay, nothing else does.
    const kept = await readdir(join(dir, 'totals', 'chk-4'));
    const referenced = (await metadataOf(5)).operators.flatMap((o) => o.files.filter((f) => f.checkpoint === 4).map((f) => f.file));
    expect(kept.sort()).toEqual(referenced.sort());
    const { values } = await restoreAndGet(backend(), 'latest');
    expect(values).toEqual(expected(4));
  });
});

describe('a damaged shared file', () => {
  const sharedFileOf = async (id: number, from: number) => {
    const entry = (await metadataOf(id)).operators.flatMap((o) => o.files).find((f) => f.checkpoint === from)!;
    return join(dir, 'totals', `chk-${from}`, entry.file);
  };

  it('is a CheckpointCorruptedError naming it when missing, and restore latest falls back to a checkpoint without it', async () => {
    // Chains: 1 ← 2, 3 ← 4, 5; retain 3 keeps 3, 4, 5 (and chk-... files they reference).
    await checkpointPhases(heapStateBackend(), { fullEvery: 2, retain: 3 });
    const shared = await sharedFileOf(4, 3);
    await rm(shared);
    const explicit = restoreAndGet(heapStateBackend(), 'totals/chk-4');
    await expect(explicit).rejects.toThrow(CheckpointCorruptedError);
    await expect(explicit).rejects.toThrow(shared);
    await expect(explicit).rejects.toThrow(/missing/);
  });

  it('falls back, with restore latest, past every checkpoint that references a corrupted shared file', async () => {
    // Chains: 1 ← 2 ← 3 ← 4 ← 5 (fullEvery 10), retain 3: 3, 4 and 5 all reference chk-1's base.
    await checkpointPhases(heapStateBackend(), { retain: 3 });
    const shared = await sharedFileOf(5, 4);
    const bytes = await readFile(shared);
    bytes[bytes.length - 2]! ^= 1;
    await writeFile(shared, bytes);
    await expect(restoreAndGet(heapStateBackend(), 'totals/chk-5')).rejects.toThrow(CheckpointCorruptedError);
    // chk-4 wrote that file too: it is damaged for 4 and 5 alike; 3 does not use it.
    const { result, values } = await restoreAndGet(heapStateBackend(), 'latest');
    expect(result.restoredFrom).toBe('totals/chk-3');
    expect(values).toEqual(expected(4));
  });
});
