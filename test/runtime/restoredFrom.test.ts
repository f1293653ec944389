import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fromArray, memoryCheckpointStorage, type RunningJob } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { expectedSums, failingAt, pausableSource, readings, skippingScheduler, sumsJob } from '../checkpoint/fixtures';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-restored-from-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('running.restoredFrom', () => {
  it('is undefined for a fresh start, and names the checkpoint a restore started from', async () => {
    const storage = fsCheckpointStorage(dir);
    const first = sumsJob({ checkpoints: { storage } }, fromArray(readings)).job.start({ restore: 'latest' });
    const { checkpoints } = await first.done;
    expect(first.restoredFrom).toBeUndefined();

    const second = sumsJob({ checkpoints: { storage } }, fromArray(readings)).job.start({ restore: 'latest' });
    const result = await second.done;
    const final = checkpoints.at(-1)!;
    expect(second.restoredFrom).toEqual({ id: final.id, path: 'sums/chk-1', kind: 'checkpoint' });
    expect(result.restoredFrom).toBe(second.restoredFrom!.path);
  });

  it('is known once the first checkpoint asked for resolves, and names a savepoint restored from', async () => {
    const storage = memoryCheckpointStorage();
    const first = sumsJob({ checkpoints: { storage } }, fromArray(readings)).job.start();
    const savepoint = await first.savepoint();
    await first.done;

    const second = sumsJob({ checkpoints: { storage } }, fromArray(readings)).job.start({ restore: { savepoint: savepoint.path } });
    await second.checkpoint();
    expect(second.restoredFrom).toEqual({ id: savepoint.id, path: savepoint.path, kind: 'savepoint' });
    await second.done;
  });
});

describe('running.restoredFrom after a restart', () => {
  it('names the checkpoint the restart restored, seen by the restarted attempt; the result keeps what the start restored', async () => {
    const storage = fsCheckpointStorage(dir);
    let running: RunningJob | undefined;
    const seen: unknown[] = [];
    let failures = 0;
    const failing = failingAt(70, () => (seen.push(running?.restoredFrom), failures++ === 0), new Error('flaky'));
    const paused = pausableSource(readings, [50]);
    const { job, out } = sumsJob(
      { scheduler: skippingScheduler(), checkpoints: { storage }, restart: { strategy: 'fixed-delay', attempts: 1, delay: 1 } },
      paused.source,
      undefined,
      failing.between,
    );
    running = job.start();
    await paused.reached(50);
    const chk = await running.checkpoint();
    expect(running.restoredFrom).toBeUndefined();
    paused.release(50);

    const result = await running.done;
    expect(result.restarts).toBe(1);
    expect(out.values).toEqual(expectedSums);
    const restored = { id: chk.id, path: 'sums/chk-1', kind: 'checkpoint' };
    // The first attempt fails at reading 70 (started fresh), the restarted one passes it (restored from chk-1).
    expect(seen).toEqual([undefined, restored]);
    expect(running.restoredFrom).toEqual(restored);
    expect(result.restoredFrom).toBeUndefined();
  });
});

describe('running.checkpoint() once the input has ended', () => {
  it('resolves with the final checkpoint of a job restored at the end of its input', async () => {
    const storage = fsCheckpointStorage(dir);
    await sumsJob({ checkpoints: { storage } }, fromArray(readings)).job.start().done;

    // Restored at offset 100 of 100: the input ends at once and the final checkpoint is taken as the job starts.
    const { job, out } = sumsJob({ checkpoints: { storage } }, fromArray(readings));
    const running = job.start({ restore: 'latest' });
    const stats = await running.checkpoint();
    const result = await running.done;
    expect(stats).toMatchObject({ id: 2, final: true, status: 'completed' });
    expect(result.checkpoints).toEqual([stats]);
    expect(out.values).toEqual([]);
  });
});
