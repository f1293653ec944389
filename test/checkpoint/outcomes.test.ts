// How checkpoints end when they do not complete: a timeout that names the tasks that did not acknowledge, a checkpoint
// subsumed by a newer one (at an aligning operator, or by a newer one completing first) aborted at once, and every
// outcome kept in the run's history with its status and reason.
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { CheckpointAbortedError, collect, createJob, keyBy, memoryCheckpointStorage, reduce, type CheckpointStorage, type RunningJob } from 'weir';
import { deferred } from '../support/deferred';
import { advanceTo } from '../support/virtualTime';
import { records, scripted, settle, unionSumJob, until, type Rec } from '../support/unionJob';

const never = () => new Promise<void>(() => undefined);

/** Whether a promise has settled, read without awaiting it. */
function tracked<T>(promise: Promise<T>) {
  const state = { settled: false, promise };
  promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

/** Memory storage whose state-file writes whose path matches `held` wait until `release()`. */
function holdingStorage(held: RegExp) {
  const inner = memoryCheckpointStorage();
  const gate = deferred();
  const storage: CheckpointStorage = {
    ...inner,
    async write(path, data) {
      if (held.test(path)) await gate.promise;
      return inner.write(path, data);
    },
  };
  return { storage, release: () => gate.resolve() };
}

/** `in → keyBy → reduce 'sum' → out`, whose source hands out 20 records and then waits forever. */
function endlessJob(storage: CheckpointStorage, options: { scheduler?: VirtualTimeScheduler; timeout?: number; maxConcurrent?: number; tolerableFailures?: number } = {}) {
  const { scheduler, ...checkpoints } = options;
  const job = createJob({ name: 'outcomes', chunkSize: 5, ...(scheduler ? { scheduler } : {}), checkpoints: { storage, ...checkpoints } });
  job
    .source(scripted(records(20, 4), (read) => (read >= 4 ? never() : undefined)), { uid: 'in' })
    .pipe(keyBy((r: Rec) => r.key), reduce((a: Rec, b: Rec) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }), collect<Rec>().sink({ uid: 'out' }));
  return job.start();
}

describe('a checkpoint that times out', () => {
  it('names the tasks its barrier never reached, without advising a longer timeout for them', async () => {
    const scheduler = new VirtualTimeScheduler();
    const holder: { running?: RunningJob; first?: Promise<unknown> } = {};
    // Input b triggers the checkpoint while it reads, then never finishes that read: its barrier never goes out.
    const b = scripted(records(20, 4, 100), (read) => {
      if (read !== 1) return undefined;
      holder.first = holder.running!.checkpoint();
      holder.first.catch(() => undefined);
      return never();
    });
    const a = scripted(records(20, 4), (read) => (read >= 2 ? never() : undefined));
    const { job } = unionSumJob(a, b, { scheduler, checkpoints: { storage: memoryCheckpointStorage(), timeout: 1_000 } });
    holder.running = job.start();
    await until(() => holder.first !== undefined);
    await settle();
    advanceTo(scheduler, 1_500);
    const error = (await holder.first!.catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(CheckpointAbortedError);
    expect(error.message).toMatch(/checkpoint 1 of job 'union-sum' did not complete within 1000 ms/);
    expect(error.message).toMatch(/its barrier never reached 'b' subtask 0, 'union' subtask 0, 'sum' subtask 0, 'out' subtask 0/);
    // Source 'a' emitted its barrier and acknowledged.
    expect(error.message).not.toMatch(/'a' subtask/);
    expect(error.message).not.toMatch(/raise checkpoints.timeout/);
    await holder.running.done.catch(() => undefined);
  });

  it('names the tasks still persisting their state, and advises a longer timeout or smaller state for them', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { storage, release } = holdingStorage(/\/sum\./);
    const running = endlessJob(storage, { scheduler, timeout: 1_000 });
    const first = running.checkpoint();
    first.catch(() => undefined);
    await settle(50);
    advanceTo(scheduler, 1_500);
    const error = (await first.catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/did not complete within 1000 ms and was aborted: still persisting their state: 'sum' subtask 0; raise checkpoints.timeout/);
    expect(error.message).not.toMatch(/never reached/);
    release();
    await running.cancel();
  });
});

describe('a subsumed checkpoint', () => {
  it('overtaken by a newer barrier while aligning is aborted at once, without counting as a failure', async () => {
    const gate = deferred();
    const holder: { running?: RunningJob; first?: ReturnType<typeof tracked> } = {};
    // b is slow: checkpoint 1 is triggered while it reads, and its barrier waits until the gate opens.
    const b = scripted(records(20, 4, 100), (read) => {
      if (read !== 1) return read > 1 ? never() : undefined;
      holder.first = tracked(holder.running!.checkpoint());
      return gate.promise;
    });
    const a = scripted(records(20, 4), (read) => (read >= 2 ? never() : undefined));
    // maxConcurrent 2, tolerableFailures 0 (default), the default 10-minute timeout, which never comes due here.
    const { job } = unionSumJob(a, b, { checkpoints: { storage: memoryCheckpointStorage(), maxConcurrent: 2 } });
    const running = (holder.running = job.start());
    await until(() => holder.first !== undefined);
    await settle();
    const second = running.checkpoint();
    await until(() => holder.first!.settled);
    const error = (await holder.first!.promise.catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(CheckpointAbortedError);
    expect(error.message).toMatch(/checkpoint 1 of job 'union-sum' was subsumed by checkpoint 2 at 'union' subtask 0/);
    gate.resolve();
    await expect(second).resolves.toMatchObject({ id: 2, status: 'completed' });
    // The job goes on: a subsumed checkpoint is no failure.
    await expect(running.checkpoint()).resolves.toMatchObject({ id: 3, status: 'completed' });
    expect(running.checkpointHistory.map((c) => [c.id, c.status, c.error])).toEqual([
      [1, 'aborted', 'CheckpointAbortedError'],
      [2, 'completed', undefined],
      [3, 'completed', undefined],
    ]);
    expect(running.checkpoints.map((c) => c.id)).toEqual([2, 3]);
    await running.cancel();
  });

  it('still pending when a newer one completes is aborted, and its files removed', async () => {
    const { storage, release } = holdingStorage(/\/chk-1\/sum\./);
    const running = endlessJob(storage, { maxConcurrent: 2 });
    const first = tracked(running.checkpoint());
    await settle();
    await expect(running.checkpoint()).resolves.toMatchObject({ id: 2, status: 'completed' });
    await until(() => first.settled);
    await expect(first.promise).rejects.toThrow(/checkpoint 1 of job 'outcomes' was subsumed by checkpoint 2, which completed first/);
    release();
    await settle();
    // Subsumed is routine, not a failure: the failure history at rest does not record it.
    expect(await storage.list('outcomes')).toEqual(['chk-2']);
    const result = await running.cancel();
    expect(result.checkpoints.map((c) => c.id)).toEqual([2]);
    expect(result.checkpointHistory).toMatchObject([
      { id: 2, status: 'completed' },
      { id: 1, status: 'aborted', error: 'CheckpointAbortedError', reason: expect.stringMatching(/subsumed by checkpoint 2/) },
    ]);
  });
});

describe('the checkpoint history', () => {
  it('keeps failed and timed-out checkpoints with their reason, beside the completed ones', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { storage, release } = holdingStorage(/\/chk-1\//);
    const running = endlessJob(storage, { scheduler, timeout: 1_000, tolerableFailures: 1 });
    const first = running.checkpoint();
    first.catch(() => undefined);
    await settle(50);
    advanceTo(scheduler, 1_500);
    await expect(first).rejects.toThrow(CheckpointAbortedError);
    release();
    await expect(running.checkpoint()).resolves.toMatchObject({ id: 2 });
    expect(running.checkpointHistory).toMatchObject([
      { id: 1, status: 'aborted', error: 'CheckpointAbortedError', reason: expect.stringMatching(/did not complete within 1000 ms/) },
      { id: 2, status: 'completed' },
    ]);
    expect(running.checkpoints.map((c) => c.id)).toEqual([2]);
    await running.cancel();
  });
});
