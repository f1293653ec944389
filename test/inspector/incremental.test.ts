import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collect, createJob, heapStateBackend, keyBy, process, readSavepoint, valueState, type RunningJob, type StateBackend } from 'weir';
import { fsCheckpointStorage, lmdbStateBackend } from 'weir/node';
import { inspectStorage } from '../../src/inspector/readCheckpoint';
import { diffCheckpointEntries, readCheckpointEntries } from '../../src/inspector/readStateEntries';
import { pausableSource } from '../checkpoint/jobFixtures';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-inspect-incremental-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `add` adds `n` to the key's total, `del` clears it. */
interface Op {
  key: string;
  n: number | null;
}

const adds = (keys: number[], n: number): Op[] => keys.map((k) => ({ key: `k${k}`, n }));
const dels = (keys: number[]): Op[] => keys.map((k) => ({ key: `k${k}`, n: null }));
/** Phases between checkpoints: a base of 200 keys (deltas must stay smaller than it), then keys changed, removed, and removed then written again. */
const phases: Op[][] = [
  adds(Array.from({ length: 200 }, (_, k) => k), 1),
  [...adds([1, 2, 3], 10), ...dels([4, 5, 6, 7])],
  [...adds([1, 200], 100), ...dels([2]), ...adds([4], 1000)],
  [...dels([1, 8]), ...adds([201], 5)],
];

const records = phases.flat();

/** The totals after the first `offset` records: the state a restore of a checkpoint at that source offset sees. */
function model(offset: number): Map<string, number> {
  const totals = new Map<string, number>();
  for (const { key, n } of records.slice(0, offset)) {
    if (n === null) totals.delete(key);
    else totals.set(key, (totals.get(key) ?? 0) + n);
  }
  return totals;
}

/** Runs the phases on `stateBackend` with an incremental checkpoint after each; returns the checkpoints' paths and the job. */
async function checkpointPhases(stateBackend: StateBackend): Promise<{ paths: string[]; running: RunningJob }> {
  const ends = phases.map((_, i) => phases.slice(0, i + 1).flat().length);
  const paused = pausableSource(records, ends.slice(0, -1));
  // One record a chunk: each checkpoint's barrier follows the records before its pause point.
  const job = createJob({ name: 'totals', stateBackend, chunkSize: 1, checkpoints: { storage: fsCheckpointStorage(dir), incremental: true, retain: 10 } });
  const total = valueState<number>('total', { queryable: 'total' });
  job
    .source(paused.source, { uid: 'in' })
    .pipe(
      keyBy((op: Op) => op.key),
      process<Op, never>(
        {
          onElement({ n }, ctx) {
            const state = ctx.state(total);
            if (n === null) state.clear();
            else state.update((state.value() ?? 0) + n);
          },
        },
        { uid: 'totals', parallelism: 2 },
      ),
    )
    .pipe(collect<never>().sink({ uid: 'out' }));
  const running = job.start();
  const paths: string[] = [];
  for (const end of ends.slice(0, -1)) {
    await paused.reached(end);
    paths.push((await running.checkpoint()).path);
    paused.release(end);
  }
  paths.push(...(await running.done).checkpoints.slice(-1).map((stats) => stats.path));
  return { paths: paths.map((path) => path.slice(path.indexOf('totals/'))), running };
}

async function collectAll<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

const backends: [string, () => StateBackend][] = [
  ['heap', () => heapStateBackend()],
  ['lmdb', () => lmdbStateBackend({ path: join(dir, 'lmdb-work') })],
];

describe.each(backends)('inspecting incremental checkpoints of the %s backend', (_name, backend) => {
  it('shows the state a restore sees: the base with the deltas applied, removals included', async () => {
    const { paths, running } = await checkpointPhases(backend());
    const storage = fsCheckpointStorage(dir);
    const [job] = await inspectStorage(storage);
    const summaries = job!.checkpoints;
    expect(summaries.map((summary) => [summary.path, summary.status])).toEqual(paths.map((path) => [path, 'complete']));
    // Every checkpoint after the first is a delta: it references the earlier checkpoints' files of its operator.
    for (const summary of summaries.slice(1)) {
      expect(summary.operators.find((operator) => operator.uid === 'totals')!.files.some(({ file }) => file.startsWith('../chk-'))).toBe(true);
    }

    const entries = await Promise.all(paths.map((path) => readCheckpointEntries(storage, path)));
    const models: Map<string, number>[] = [];
    for (const [i, summary] of summaries.entries()) {
      const savepoint = await readSavepoint(storage, paths[i]!);
      // What the checkpoint holds is what the source had read by its barrier.
      const [{ offset }] = (await savepoint.operatorState('in')) as [{ offset: number }];
      const expected = model(offset);
      models.push(expected);
      const state = entries[i]!.get('totals')!.get('total')!;
      expect(new Map(state.map((entry) => [entry.key, entry.value]))).toEqual(expected);
      expect(state).toHaveLength(expected.size);
      const counted = summary.operators.find((operator) => operator.uid === 'totals')!.states.find((s) => s.name === 'total')!;
      expect([counted.keys, counted.entries]).toEqual([expected.size, expected.size]);
      expect(counted.keyGroups.reduce((sum, [, keys]) => sum + keys, 0)).toBe(expected.size);

      expect(new Map(await collectAll(savepoint.keyedState('totals', 'total')))).toEqual(expected);
      expect(savepoint.operators.find((operator) => operator.uid === 'totals')).toMatchObject({ parallelism: 2, keyGroupRanges: [[0, 63], [64, 127]] });
      // Queries of a retained checkpoint read it the same way.
      const { keys } = await running.queryKeys('total', { asOf: summary.id, limit: 1_000 });
      expect(keys.sort()).toEqual([...expected.keys()].sort());
    }
    expect(models.at(-1)).toEqual(model(records.length));

    // Between consecutive checkpoints, the diff names the keys removed, added and changed, as the job's state did.
    let removed = 0;
    for (let i = 1; i < paths.length; i++) {
      const diff = diffCheckpointEntries(entries[i - 1]!, entries[i]!).find((d) => d.uid === 'totals' && d.state === 'total')!;
      const [before, after] = [models[i - 1]!, models[i]!];
      const keys = (entries: { key: unknown }[]) => entries.map((entry) => entry.key).sort();
      expect(keys(diff.removed)).toEqual([...before.keys()].filter((key) => !after.has(key)).sort());
      expect(keys(diff.added)).toEqual([...after.keys()].filter((key) => !before.has(key)).sort());
      expect(keys(diff.changed.map(({ after }) => after))).toEqual([...after.keys()].filter((key) => before.has(key) && before.get(key) !== after.get(key)).sort());
      removed += diff.removed.length;
    }
    expect(removed).toBeGreaterThan(0);
  });
});
