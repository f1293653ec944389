import { copyFile, mkdir, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  CheckpointCorruptedError,
  CheckpointNotFoundError,
  ForeignCheckpointError,
  JobDefinitionError,
  NonRestoredStateError,
  StateSizeExceededError,
  collect,
  createJob,
  fromArray,
  keyBy,
  map,
  memoryCheckpointStorage,
  reduce,
  type CheckpointStorage,
} from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { expectedSums, list, pausableSource, readings, sizeOf, sumsJob, type Reading } from './fixtures';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-checkpoint-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the sums job to its end with a checkpoint at each pause point (plus the final one); returns its result. */
async function runWithCheckpointsAt(storage: CheckpointStorage, pauseAt: number[], options: { retain?: number; name?: string } = {}) {
  const paused = pausableSource(readings, pauseAt);
  const { job, out } = sumsJob({ name: options.name, checkpoints: { storage, retain: options.retain ?? 5 } }, paused.source);
  const running = job.start();
  for (const at of pauseAt) {
    await paused.reached(at);
    await running.checkpoint();
    paused.release(at);
  }
  const result = await running.done;
  expect(out.values).toEqual(expectedSums);
  return result;
}

describe('running.checkpoint()', () => {
  it('resolves with the stats of the completed checkpoint', async () => {
    const paused = pausableSource(readings, [50]);
    const { job } = sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir) } }, paused.source);
    const running = job.start();
    await paused.reached(50);
    const stats = await running.checkpoint();
    expect(stats.id).toBe(1);
    expect(stats.path).toBe(join(dir, 'sums', 'chk-1'));
    expect(stats.durationMs).toBeGreaterThanOrEqual(0);
    expect(stats.final).toBe(false);
    expect(stats.bytes).toBe(await sizeOf(stats.path));
    expect(running.checkpoints).toEqual([stats]);
    paused.release(50);
    const result = await running.done;
    expect(result.checkpoints.map((c) => [c.id, c.final])).toEqual([
      [1, false],
      [2, true],
    ]);
  });

  it('rejects with JobDefinitionError when checkpointing is off', async () => {
    const { job } = sumsJob({}, fromArray(readings));
    const running = job.start();
    await expect(running.checkpoint()).rejects.toThrow(JobDefinitionError);
    await running.done;
  });
});

describe('periodic checkpoints and stop', () => {
  it('are taken every `interval` ms while the job runs', async () => {
    const paused = pausableSource(readings, [50]);
    const { job, out } = sumsJob({ checkpoints: { storage: memoryCheckpointStorage(), interval: 2 } }, paused.source);
    const running = job.start();
    await paused.reached(50);
    // Checkpoints go on while the source is paused, and one taken after the 50th record commits all the output before
    // it (the first ones may have covered fewer records).
    await vi.waitFor(
      () => {
        expect(running.checkpoints.length).toBeGreaterThanOrEqual(2);
        expect(out.values).toHaveLength(50);
      },
      { timeout: 30_000, interval: 10 },
    );
    expect(out.values).toEqual(expectedSums.slice(0, 50));
    paused.release(50);
    const result = await running.done;
    expect(result.checkpoints.map((c) => c.id)).toEqual(result.checkpoints.map((_, i) => i + 1));
    expect(result.checkpoints.at(-1)!.final).toBe(true);
    expect(out.values).toEqual(expectedSums);
  });

  it('stop() ends the job with a final checkpoint from which a new job continues', async () => {
    const storage = memoryCheckpointStorage();
    const out = collect<Reading>();
    const paused = pausableSource(readings, [50]);
    const running = sumsJob({ checkpoints: { storage } }, paused.source, out).job.start();
    await paused.reached(50);
    const stopped = await running.stop();
    expect(stopped.status).toBe('stopped');
    expect(stopped.checkpoints.map((c) => c.final)).toEqual([true]);
    expect(out.values).toEqual(expectedSums.slice(0, 50));

    paused.release(50);
    await sumsJob({ checkpoints: { storage } }, paused.source, out).job.start({ restore: 'latest' }).done;
    expect(out.values).toEqual(expectedSums);
  });
});

describe.each([
  ['memory', () => memoryCheckpointStorage()],
  ['fs', () => fsCheckpointStorage(dir)],
])('exactly-once restore with %s checkpoint storage', (_name, createStorage) => {
  it('continues a cancelled job from its latest checkpoint without counting anything twice', async () => {
    const storage = createStorage();
    const out = collect<Reading>();
    const paused = pausableSource(readings, [50]);
    const first = sumsJob({ checkpoints: { storage } }, paused.source, out).job.start();
    await paused.reached(50);
    await first.checkpoint();
    expect((await first.cancel()).status).toBe('cancelled');
    expect(out.values).toEqual(expectedSums.slice(0, 50));

    paused.release(50);
    const result = await sumsJob({ checkpoints: { storage } }, paused.source, out).job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBe('sums/chk-1');
    expect(out.values).toEqual(expectedSums);
  });

  it('restores the checkpoint at a given path', async () => {
    const storage = createStorage();
    const result = await runWithCheckpointsAt(storage, [30, 60]);
    const [chk1] = result.checkpoints;
    const { job, out } = sumsJob({ checkpoints: { storage } }, fromArray(readings));
    const restored = await job.start({ restore: chk1!.path }).done;
    expect(restored.restoredFrom).toBe(chk1!.path);
    // State of the first 30 readings came from the checkpoint, the rest was replayed from offset 30.
    expect(out.values).toEqual(expectedSums.slice(30));
  });

  it('starts fresh with restore: latest when the job has no checkpoint', async () => {
    const { job, out } = sumsJob({ checkpoints: { storage: createStorage() } }, fromArray(readings));
    const result = await job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBeUndefined();
    expect(out.values).toEqual(expectedSums);
  });
});

describe('checkpoint directories', () => {
  it('keep the newest `retain` complete checkpoints', async () => {
    await runWithCheckpointsAt(fsCheckpointStorage(dir), [20, 40, 60], { retain: 2 });
    expect(await list(join(dir, 'sums'))).toEqual(['chk-3', 'chk-4']);
  });

  it('keep retained checkpoints of earlier runs of the job, as Flink recovers its completed checkpoints', async () => {
    const storage = fsCheckpointStorage(dir);
    await runWithCheckpointsAt(storage, [50], { retain: 2 });
    const { job } = sumsJob({ checkpoints: { storage, retain: 2 } }, fromArray(readings));
    await job.start({ restore: 'sums/chk-1' }).done;
    expect(await list(join(dir, 'sums'))).toEqual(['chk-2', 'chk-3']);
  });

  it('get their _metadata written last', async () => {
    const inner = memoryCheckpointStorage();
    const writes: string[] = [];
    const recording: CheckpointStorage = { ...inner, write: (path, data) => (writes.push(path), inner.write(path, data)) };
    await runWithCheckpointsAt(recording, [50]);
    for (const chk of ['sums/chk-1/', 'sums/chk-2/']) {
      const files = writes.filter((path) => path.startsWith(chk)).map((path) => path.slice(chk.length));
      expect(files.sort()).toEqual(['_metadata', 'in.0', 'out.0', 'sum.0.kg-0-127']);
      expect(writes.filter((path) => path.startsWith(chk)).at(-1)).toBe(`${chk}_metadata`);
    }
  });

  it('without _metadata are not restored, and are removed when the job starts again', async () => {
    const storage = fsCheckpointStorage(dir);
    await runWithCheckpointsAt(storage, [50]);
    // A crash while chk-3 was being written: its state files are there, its _metadata is not.
    const torn = join(dir, 'sums', 'chk-3');
    await mkdir(torn);
    await copyFile(join(dir, 'sums', 'chk-2', 'sum.0.kg-0-127'), join(torn, 'sum.0.kg-0-127'));

    await expect(sumsJob({ checkpoints: { storage } }, fromArray(readings)).job.start({ restore: 'sums/chk-3' }).done).rejects.toThrow(
      CheckpointNotFoundError,
    );
    const { job, out } = sumsJob({ checkpoints: { storage, retain: 5 } }, fromArray(readings));
    const result = await job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBe('sums/chk-2');
    expect(out.values).toEqual([]);
    expect(result.checkpoints.map((c) => c.id)).toEqual([4]);
    expect(await list(join(dir, 'sums'))).toEqual(['chk-1', 'chk-2', 'chk-4']);
  });
});

describe('damaged checkpoints', () => {
  const damages: [string, string, (file: string) => Promise<void>][] = [
    ['a flipped byte in a state file', 'sum.0.kg-0-127', flipLastByte],
    ['a truncated state file', 'sum.0.kg-0-127', (file) => truncate(file, 40)],
    ['a flipped byte in _metadata', '_metadata', flipLastByte],
    ['a truncated _metadata', '_metadata', (file) => truncate(file, 10)],
    ['an empty state file', 'in.0', (file) => writeFile(file, '')],
  ];

  it.each(damages)('%s: an explicit restore rejects with CheckpointCorruptedError naming the file', async (_what, name, damage) => {
    const storage = fsCheckpointStorage(dir);
    await runWithCheckpointsAt(storage, [50]);
    const file = join(dir, 'sums', 'chk-2', name);
    await damage(file);
    const done = sumsJob({ checkpoints: { storage } }, fromArray(readings)).job.start({ restore: join(dir, 'sums', 'chk-2') }).done;
    await expect(done).rejects.toThrow(CheckpointCorruptedError);
    await expect(done).rejects.toThrow(file);
  });

  it.each(damages)('%s: restore latest falls back to the previous checkpoint and warns', async (_what, name, damage) => {
    const storage = fsCheckpointStorage(dir);
    await runWithCheckpointsAt(storage, [50]);
    await damage(join(dir, 'sums', 'chk-2', name));
    const warnings: string[] = [];
    const { job, out } = sumsJob({ checkpoints: { storage }, onWarning: (message) => warnings.push(message) }, fromArray(readings));
    const result = await job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBe('sums/chk-1');
    expect(out.values).toEqual(expectedSums.slice(50));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/checkpoint 2/);
    expect(warnings[0]).toContain(name);
  });

  it('of another job are rejected with ForeignCheckpointError', async () => {
    const storage = fsCheckpointStorage(dir);
    const result = await runWithCheckpointsAt(storage, [50], { name: 'job-a' });
    const { job } = sumsJob({ name: 'job-b', checkpoints: { storage } }, fromArray(readings));
    const done = job.start({ restore: result.checkpoints[0]!.path }).done;
    await expect(done).rejects.toThrow(ForeignCheckpointError);
    await expect(done).rejects.toThrow(/job-a/);
  });

  it('that do not exist are rejected with CheckpointNotFoundError', async () => {
    const { job } = sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir) } }, fromArray(readings));
    await expect(job.start({ restore: 'sums/chk-42' }).done).rejects.toThrow(CheckpointNotFoundError);
  });
});

async function flipLastByte(file: string): Promise<void> {
  const bytes = await readFile(file);
  bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0x01;
  await writeFile(file, bytes);
}

describe('state size limit of memory checkpoint storage', () => {
  it('fails the job with StateSizeExceededError naming the operator', async () => {
    const storage = memoryCheckpointStorage({ maxStateSize: 1000 });
    const big = Array.from({ length: 200 }, (_, n) => ({ key: `a-rather-long-key-number-${n}`, n }));
    const { job, out } = sumsJob({ checkpoints: { storage } }, fromArray(big));
    const done = job.start().done;
    await expect(done).rejects.toThrow(StateSizeExceededError);
    await expect(done).rejects.toThrow(/operator 'sum'/);
    expect(out.values).toEqual([]);
  });
});

describe('restoring state of operators the job no longer has', () => {
  const withoutSum = (storage: CheckpointStorage) => {
    const job = createJob({ name: 'sums', checkpoints: { storage } });
    const out = collect<number>();
    job.source(fromArray(readings), { uid: 'in' }).pipe(
      map((r) => r.n),
      keyBy((n) => n % 2),
      reduce((a, b) => a + b, { uid: 'sum-by-parity' }),
      out.sink({ uid: 'out' }),
    );
    return { job, out };
  };

  it('is rejected with NonRestoredStateError naming their uids', async () => {
    const storage = memoryCheckpointStorage();
    await runWithCheckpointsAt(storage, [50]);
    const done = withoutSum(storage).job.start({ restore: 'sums/chk-1' }).done;
    await expect(done).rejects.toThrow(NonRestoredStateError);
    await expect(done).rejects.toThrow(/'sum'/);
    await expect(done).rejects.toMatchObject({ checkpoint: 'sums/chk-1', uids: ['sum'] });
  });

  it('drops that state with allowNonRestoredState', async () => {
    const storage = memoryCheckpointStorage();
    await runWithCheckpointsAt(storage, [50]);
    const { job, out } = withoutSum(storage);
    const result = await job.start({ restore: 'sums/chk-1', allowNonRestoredState: true }).done;
    expect(result.restoredFrom).toBe('sums/chk-1');
    // The source resumed at its saved offset; the new operator started with empty state.
    expect(out.values).toHaveLength(50);
    expect(out.values.at(-1)).toBe(readings.slice(50).filter((r) => r.n % 2 === 1).reduce((sum, r) => sum + r.n, 0));
  });
});
