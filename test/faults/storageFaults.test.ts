import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VirtualTimeScheduler } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointAbortedError, CheckpointCorruptedError, CheckpointFailuresExceededError, collect, type CheckpointStats } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { loadCheckpoint } from '../../src/checkpoint/loadCheckpoint';
import { expectedSums, pausableSource, readings, sumsJob, type Reading } from '../checkpoint/jobFixtures';
import { faultyStorage, type Fault } from '../support/faultyStorage';
import { advanceTo } from '../support/virtualTime';

// Storage faults: a storage wrapper fails writes (I/O error, ENOSPC, a torn write under the final name, a write
// slower than the checkpoint timeout) and reads on restore. The checkpoint it hits fails and its files go; the job
// keeps running while failures stay within `tolerableFailures`; no completed checkpoint is damaged (each is read back
// whole); a restore falls back past a damaged checkpoint, and fails with the error on an I/O error.

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-storage-faults-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const isState = (path: string) => /\/chk-\d+\/[^_][^/]*$/.test(path);
const isMetadata = (path: string) => path.endsWith('/_metadata');

/** Runs the sums job over the fs storage wrapped in faults: checkpoint 1 at record 20, the faulty one at 40, one more at 60. */
async function runWithFault(fault: Fault, match: (path: string) => boolean, options: { tolerableFailures?: number } = {}) {
  const storage = faultyStorage(fsCheckpointStorage(dir));
  const gate = pausableSource(readings, [20, 40, 60]);
  const out = collect<Reading>();
  const { job } = sumsJob({ checkpoints: { storage, retain: 5, tolerableFailures: options.tolerableFailures ?? 1 } }, gate.source, out);
  const running = job.start();
  const reports: CheckpointStats[] = [];
  running.checkpoints$.subscribe((stats) => reports.push(stats));
  await gate.reached(20);
  const first = await running.checkpoint();
  gate.release(20);
  await gate.reached(40);
  storage.inject(fault, match);
  const failed = await running.checkpoint().then(
    () => undefined,
    (error: unknown) => error,
  );
  gate.release(40);
  await gate.reached(60);
  const third = await running.checkpoint();
  gate.release(60);
  const result = await running.done;
  await storage.settled();
  return { storage, failed, first, third, result, reports, out };
}

/** Every `chk-<n>` directory that has `_metadata` reads back whole, every one without is gone. */
async function checkCompleted(storage: ReturnType<typeof faultyStorage>, ids: number[]): Promise<void> {
  const names = (await readdir(join(dir, 'sums'))).filter((name) => name.startsWith('chk-')).sort();
  expect(names).toEqual(ids.map((id) => `chk-${id}`).sort());
  for (const id of ids) {
    const loaded = await loadCheckpoint(storage, `sums/chk-${id}`, 'sums');
    expect(loaded.metadata.id).toBe(id);
  }
}

describe('storage faults while checkpointing', () => {
  it('a write error fails that checkpoint only; the job runs on within tolerableFailures', async () => {
    const { failed, first, third, result, reports, out, storage } = await runWithFault({ kind: 'write-error' }, isState);
    expect(String(failed)).toMatch(/EIO/);
    expect(reports.map((r) => r.status)).toEqual(['completed', 'failed', 'completed', 'completed']);
    expect([first.id, third.id]).toEqual([1, 3]);
    expect(out.values).toEqual(expectedSums);
    expect(result.checkpoints.map((c) => c.id)).toEqual([1, 3, 4]);
    await checkCompleted(storage, [1, 3, 4]);
  });

  it('ENOSPC on _metadata fails that checkpoint; the earlier ones stay whole', async () => {
    const { failed, out, storage, reports } = await runWithFault({ kind: 'enospc' }, isMetadata);
    expect(String(failed)).toMatch(/ENOSPC/);
    expect(reports[1]).toMatchObject({ id: 2, status: 'failed' });
    expect(out.values).toEqual(expectedSums);
    // The metadata write may have started: the directory of checkpoint 2 may stay (without _metadata) until the
    // next start cleans it up, but never counts.
    const names = await readdir(join(dir, 'sums'));
    if (names.includes('chk-2')) expect(await readdir(join(dir, 'sums', 'chk-2'))).not.toContain('_metadata');
    for (const id of [1, 3, 4]) await loadCheckpoint(storage, `sums/chk-${id}`, 'sums');
  });

  it('a torn state file fails the checkpoint and is removed with it', async () => {
    const { failed, out, storage } = await runWithFault({ kind: 'torn', keep: 40 }, isState);
    expect(String(failed)).toMatch(/EIO/);
    expect(out.values).toEqual(expectedSums);
    await checkCompleted(storage, [1, 3, 4]);
  });

  it('a write slower than the checkpoint timeout aborts the checkpoint, and its late file does not bring it back', async () => {
    // The timeout runs on a virtual clock and the write is held until the test lets it go: the order of the two,
    // which real timers leave to the machine's load, is the test's.
    const scheduler = new VirtualTimeScheduler();
    const storage = faultyStorage(fsCheckpointStorage(dir));
    const gate = pausableSource(readings, [20, 40, 60]);
    const out = collect<Reading>();
    const { job } = sumsJob({ scheduler, checkpoints: { storage, retain: 5, tolerableFailures: 1, timeout: 150 } }, gate.source, out);
    const running = job.start();
    const reports: CheckpointStats[] = [];
    running.checkpoints$.subscribe((stats) => reports.push(stats));
    await gate.reached(20);
    await running.checkpoint();
    gate.release(20);
    await gate.reached(40);
    storage.inject({ kind: 'held' }, isState);
    const failing = running.checkpoint().then(
      () => undefined,
      (error: unknown) => error,
    );
    await storage.held();
    const isCheckpoint2 = (path: string) => /\/chk-2\/?$/.test(path);
    const removed = storage.nextRemove(isCheckpoint2);
    advanceTo(scheduler, scheduler.now() + 150);
    const failed = await failing;
    expect(failed).toBeInstanceOf(CheckpointAbortedError);
    expect(String((failed as Error).message)).toMatch(/did not complete within 150 ms/);
    // The abort removed checkpoint 2's directory; the late write brings it back, and the coordinator removes it again.
    await removed;
    const removedAgain = storage.nextRemove(isCheckpoint2);
    storage.releaseHeld();
    await removedAgain;
    gate.release(40);
    await gate.reached(60);
    await running.checkpoint();
    gate.release(60);
    await running.done;
    await storage.settled();
    expect(reports[1]).toMatchObject({ id: 2, status: 'aborted' });
    expect(out.values).toEqual(expectedSums);
    await checkCompleted(storage, [1, 3, 4]);
  });

  it('more consecutive failures than tolerated fail the job; the completed checkpoint stays restorable', async () => {
    const storage = faultyStorage(fsCheckpointStorage(dir));
    const gate = pausableSource(readings, [20, 40]);
    const { job } = sumsJob({ checkpoints: { storage, retain: 5, tolerableFailures: 1 } }, gate.source);
    const running = job.start();
    await gate.reached(20);
    await running.checkpoint();
    gate.release(20);
    await gate.reached(40);
    storage.inject({ kind: 'enospc' }, isState, 2);
    await expect(running.checkpoint()).rejects.toThrow(/ENOSPC/);
    await expect(running.checkpoint()).rejects.toThrow(/ENOSPC/);
    await expect(running.done).rejects.toBeInstanceOf(CheckpointFailuresExceededError);
    gate.releaseAll();
    await checkCompleted(storage, [1]);
  });
});

describe('storage faults on restore', () => {
  /** Two completed checkpoints (1 at record 20, 2 at record 40), then the job is cancelled. */
  async function twoCheckpoints() {
    const storage = faultyStorage(fsCheckpointStorage(dir));
    const gate = pausableSource(readings, [20, 40]);
    const { job } = sumsJob({ checkpoints: { storage, retain: 5 } }, gate.source);
    const running = job.start();
    await gate.reached(20);
    await running.checkpoint();
    gate.release(20);
    await gate.reached(40);
    await running.checkpoint();
    await running.cancel();
    gate.releaseAll();
    return storage;
  }

  /** Restores `latest` through the storage; resolves with where it restored from, the warnings, and the output. */
  async function restoreLatest(storage: ReturnType<typeof faultyStorage>) {
    const warnings: string[] = [];
    const { job, out } = sumsJob({ checkpoints: { storage }, onWarning: (message) => warnings.push(message) }, pausableSource(readings, []).source);
    const result = await job.start({ restore: 'latest' }).done;
    return { restoredFrom: result.restoredFrom, warnings, out: out.values };
  }

  it('a damaged state file (a bit flipped on read) makes latest fall back to the previous checkpoint', async () => {
    const storage = await twoCheckpoints();
    storage.inject({ kind: 'bit-flip' }, (path) => path.startsWith('sums/chk-2/') && isState(path));
    const { restoredFrom, warnings, out } = await restoreLatest(storage);
    expect(restoredFrom).toMatch(/chk-1$/);
    expect(warnings.join('\n')).toMatch(/checkpoint 2 .*checksum mismatch.*falling back/);
    expect(out).toEqual(expectedSums.slice(20));
  });

  it('a torn _metadata (a broken storage wrote part of it) is skipped by latest', async () => {
    const storage = faultyStorage(fsCheckpointStorage(dir));
    const gate = pausableSource(readings, [20, 40]);
    const { job } = sumsJob({ checkpoints: { storage, retain: 5, tolerableFailures: 5 } }, gate.source);
    const running = job.start();
    await gate.reached(20);
    await running.checkpoint();
    gate.release(20);
    await gate.reached(40);
    storage.inject({ kind: 'torn', keep: 30 }, isMetadata);
    await expect(running.checkpoint()).rejects.toThrow(/EIO/);
    await running.cancel();
    gate.releaseAll();
    // The torn _metadata stays under its final name (the storage is broken); it must never pass for a checkpoint.
    expect(await readdir(join(dir, 'sums', 'chk-2'))).toContain('_metadata');
    await expect(loadCheckpoint(storage, 'sums/chk-2', 'sums')).rejects.toBeInstanceOf(CheckpointCorruptedError);
    const { restoredFrom, warnings, out } = await restoreLatest(storage);
    expect(restoredFrom).toMatch(/chk-1$/);
    expect(warnings.join('\n')).toMatch(/checkpoint 2 .*falling back/);
    expect(out).toEqual(expectedSums.slice(20));
  });

  it('an I/O error on restore fails the start with that error and damages nothing: the next start restores the newest', async () => {
    const storage = await twoCheckpoints();
    storage.inject({ kind: 'read-error' }, (path) => path.startsWith('sums/chk-2/'));
    await expect(restoreLatest(storage)).rejects.toThrow(/EIO/);
    storage.heal();
    const { restoredFrom, warnings, out } = await restoreLatest(storage);
    expect(restoredFrom).toMatch(/chk-2$/);
    expect(warnings).toEqual([]);
    expect(out).toEqual(expectedSums.slice(40));
  });
});
