import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StateMigrationError, collect, createJob, fromArray, listState, process, type ProcessContext, type Redistribution, type Source } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { pausableSource, tempDir } from '../support/savepointFixtures';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir('weir-operator-state-')));
afterEach(() => cleanup());

const records = Array.from({ length: 12 }, (_, n) => n);
const buffer = listState<number>('buffer');

/**
 * `in → process 'buf' (parallelism p) → out`: each instance adds every record to its operator list state; the first
 * record an instance sees after a restore makes it emit what it restored, as `[restored…]`.
 */
function bufferJob(source: Source<number>, parallelism: number, redistribution: Redistribution) {
  const job = createJob({ name: 'operator-state', chunkSize: 1, checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } });
  const out = collect<number[]>();
  const started = new WeakSet<ProcessContext>();
  job.source(source, { uid: 'in' }).pipe(
    process<number, number[]>(
      {
        onElement(n, ctx, emit) {
          const state = ctx.operatorState(buffer, { redistribution });
          if (!started.has(ctx)) {
            started.add(ctx);
            emit.emit(state.get());
          }
          state.add(n);
        },
      },
      { uid: 'buf', parallelism },
    ),
    out.sink({ uid: 'out' }),
  );
  return { job, out };
}

/** Runs at `from` instances over the first `at` records, stops with a savepoint, and restores at `to` instances. */
async function rescale(from: number, to: number, at: number, redistribution: Redistribution, restoreAs = redistribution) {
  const paused = pausableSource(records, [at]);
  const first = bufferJob(paused.source, from, redistribution);
  const running = first.job.start();
  await paused.reached(at);
  const savepoint = (await running.stop({ savepoint: { path: join(dir, 'savepoints') } })).checkpoints.at(-1)!.path;
  paused.release(at);
  const second = bufferJob(paused.source, to, restoreAs);
  await second.job.start({ restore: { savepoint } }).done;
  // The first `to` outputs of the restored run are its instances' restored lists, in instance order (round-robin).
  return second.out.values.slice(0, to);
}

describe('operator list state', () => {
  it('splits the saved lists evenly among more instances (2 → 3)', async () => {
    // Instance 0 saw 0, 2, 4 and instance 1 saw 1, 3, 5: concatenated in instance order, then split in three.
    expect(await rescale(2, 3, 6, 'even-split')).toEqual([
      [0, 2],
      [4, 1],
      [3, 5],
    ]);
  });

  it('gathers every saved list into one instance (3 → 1)', async () => {
    expect(await rescale(3, 1, 6, 'even-split')).toEqual([[0, 3, 1, 4, 2, 5]]);
  });

  it('gives every instance the union of the saved lists with union redistribution', async () => {
    expect(await rescale(2, 3, 6, 'union')).toEqual([
      [0, 2, 4, 1, 3, 5],
      [0, 2, 4, 1, 3, 5],
      [0, 2, 4, 1, 3, 5],
    ]);
  });

  it('keeps each instance its own list when restored at the same parallelism with even-split', async () => {
    expect(await rescale(2, 2, 6, 'even-split')).toEqual([
      [0, 2, 4],
      [1, 3, 5],
    ]);
  });

  it('fails with StateMigrationError when state saved by one redistribution is read by the other', async () => {
    await expect(rescale(2, 2, 6, 'union', 'even-split')).rejects.toThrow(StateMigrationError);
  });

  it('writes nothing of an addAll or update with a null element', async () => {
    const job = createJob({ name: 'operator-state-null' });
    const out = collect<string>();
    const list = listState<number | null>('list');
    job.source(fromArray([0]), { uid: 'in' }).pipe(
      process<number, string>(
        {
          onElement(_n, ctx, emit) {
            const state = ctx.operatorState(list);
            state.add(1);
            for (const write of [() => state.addAll([2, null, 3]), () => state.update([4, null])]) {
              try {
                write();
              } catch (error) {
                emit.emit(`${(error as Error).name}: ${JSON.stringify(state.get())}`);
              }
            }
          },
        },
        { uid: 'op' },
      ),
      out.sink({ uid: 'out' }),
    );
    await job.start().done;
    expect(out.values).toEqual(['NullStateValueError: [1]', 'NullStateValueError: [1]']);
  });
});
