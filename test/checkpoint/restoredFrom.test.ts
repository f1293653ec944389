import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fromArray, memoryCheckpointStorage } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { readings, sumsJob } from './fixtures';

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
