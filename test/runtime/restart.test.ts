import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobDefinitionError, collect, createJob, fromArray, map, memoryCheckpointStorage, type CheckpointStorage, type Flow } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { expectedSums, failingAt, list, pausableSource, readings, restartFromLatestCheckpoint, skippingScheduler, sumsJob, userFunctionError, type Reading } from '../checkpoint/fixtures';

describe('restart strategies', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weir-restart-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fixed-delay: restores from the latest checkpoint after a failure and collects every output exactly once', async () => {
    const { scheduler } = await restartFromLatestCheckpoint(memoryCheckpointStorage(), 60_000);
    expect(scheduler.delays).toEqual([60_000]);
  });

  it('running.restoredFrom names what the current attempt restored from: where the job started, then each restart', async () => {
    const storage = memoryCheckpointStorage();
    // A first run leaves chk-1 after 30 readings.
    const first = pausableSource(readings, [30]);
    const firstRun = sumsJob({ checkpoints: { storage } }, first.source).job.start();
    expect(firstRun.restoredFrom).toBeUndefined();
    await first.reached(30);
    const chk1 = await firstRun.checkpoint();
    await firstRun.cancel();

    // The second starts from chk-1, checkpoints after 50 (chk-2) and fails once at 70.
    let failures = 0;
    const failing = failingAt(70, () => failures++ === 0, new Error('flaky'));
    const paused = pausableSource(readings, [50]);
    const { job } = sumsJob(
      { scheduler: skippingScheduler(), checkpoints: { storage }, restart: { strategy: 'fixed-delay', attempts: 1, delay: 1 } },
      paused.source,
      undefined,
      failing.between,
    );
    const running = job.start({ restore: 'latest' });
    await paused.reached(50);
    expect(running.restoredFrom).toEqual({ id: chk1.id, kind: 'checkpoint', path: chk1.path });
    const chk2 = await running.checkpoint();
    paused.release(50);
    const result = await running.done;

    expect(result.restarts).toBe(1);
    expect(running.restoredFrom).toEqual({ id: chk2.id, kind: 'checkpoint', path: chk2.path });
    expect(result.restoredFrom).toBe(chk1.path);
  });

  it('fixed-delay: starts over when the job failed before its first checkpoint', async () => {
    let failures = 0;
    const failing = failingAt(70, () => failures++ === 0, new Error('flaky'));
    const { job, out } = sumsJob(
      { scheduler: skippingScheduler(), checkpoints: {}, restart: { strategy: 'fixed-delay', attempts: 1, delay: 1 } },
      fromArray(readings),
      undefined,
      failing.between,
    );
    const result = await job.start().done;
    expect(result.restarts).toBe(1);
    expect(out.values).toEqual(expectedSums);
  });

  it('fixed-delay: fails with the original error (as the cause) after the last attempt, completed checkpoints intact', async () => {
    const storage = fsCheckpointStorage(dir);
    const original = new Error('always broken');
    const failing = failingAt(70, () => true, original);
    const paused = pausableSource(readings, [50]);
    const { job, out } = sumsJob(
      { scheduler: skippingScheduler(), checkpoints: { storage }, restart: { strategy: 'fixed-delay', attempts: 2, delay: 10 } },
      paused.source,
      undefined,
      failing.between,
    );
    const running = job.start();
    await paused.reached(50);
    const chk = await running.checkpoint();
    paused.release(50);

    await expect(running.done).rejects.toEqual(userFunctionError('map-1', original));
    expect(failing.throws()).toBe(3);
    expect(out.values).toEqual(expectedSums.slice(0, 50));
    expect(await list(join(dir, 'sums'))).toEqual(['chk-1']);
    expect(await list(chk.path)).toContain('_metadata');

    // The checkpoint still restores: a fixed job picks up where the broken one left off.
    const fixed = sumsJob({ checkpoints: { storage } }, fromArray(readings), out);
    await fixed.job.start({ restore: 'latest' }).done;
    expect(out.values).toEqual(expectedSums);
  });

  it('exponential-delay: multiplies the delay up to its maximum, then fails with the original error', async () => {
    const scheduler = skippingScheduler();
    const original = new Error('always broken');
    const failing = failingAt(3, () => true, original);
    const { job } = sumsJob(
      {
        scheduler,
        restart: { strategy: 'exponential-delay', attempts: 4, initialDelay: 1_000, multiplier: 3, maxDelay: 5_000 },
      },
      fromArray(readings),
      undefined,
      failing.between,
    );
    await expect(job.start().done).rejects.toEqual(userFunctionError('map-1', original));
    expect(scheduler.delays).toEqual([1_000, 3_000, 5_000, 5_000]);
    expect(failing.throws()).toBe(5);
  });

  it('none: fails at the first error, without a restart', async () => {
    const original = new Error('broken once');
    let failures = 0;
    const failing = failingAt(3, () => failures++ === 0, original);
    const { job, out } = sumsJob({ checkpoints: {}, restart: { strategy: 'none' } }, fromArray(readings), undefined, failing.between);
    await expect(job.start().done).rejects.toEqual(userFunctionError('map-1', original));
    expect(failing.throws()).toBe(1);
    expect(out.values).toEqual([]);
  });

  it('is none by default', async () => {
    const original = new Error('broken once');
    let failures = 0;
    const failing = failingAt(3, () => failures++ === 0, original);
    const { job } = sumsJob({}, fromArray(readings), undefined, failing.between);
    await expect(job.start().done).rejects.toEqual(userFunctionError('map-1', original));
  });

  it('publishes nothing twice when the final checkpoint fails and the job restarts', async () => {
    const inner = memoryCheckpointStorage();
    let failedOnce = false;
    const flaky: CheckpointStorage = {
      ...inner,
      async write(path, data) {
        if (path.endsWith('chk-2/_metadata') && !failedOnce) {
          failedOnce = true;
          throw new Error('disk hiccup');
        }
        return inner.write(path, data);
      },
    };
    const paused = pausableSource(readings, [50]);
    const { job, out } = sumsJob(
      { scheduler: skippingScheduler(), checkpoints: { storage: flaky }, restart: { strategy: 'fixed-delay', attempts: 1, delay: 1 } },
      paused.source,
    );
    const running = job.start();
    await paused.reached(50);
    await running.checkpoint();
    paused.release(50);
    const result = await running.done;
    expect(failedOnce).toBe(true);
    expect(result.restarts).toBe(1);
    expect(out.values).toEqual(expectedSums);
  });

  it('cancel() during a restart delay ends the job as cancelled, without another attempt', async () => {
    const original = new Error('always broken');
    let running: ReturnType<ReturnType<typeof sumsJob>['job']['start']> | undefined;
    let attempts = 0;
    const between = (flow: Flow<Reading>) =>
      flow.pipe(
        map((r: Reading) => {
          if (r.n === 3) {
            attempts++;
            setTimeout(() => void running!.cancel());
            throw original;
          }
          return r;
        }),
      );
    const { job } = sumsJob({ restart: { strategy: 'fixed-delay', attempts: 5, delay: 60_000 } }, fromArray(readings), undefined, between);
    running = job.start();
    const result = await running.done;
    expect(result).toMatchObject({ status: 'cancelled', restarts: 1 });
    expect(attempts).toBe(1);
  });

  it.each([
    ['fixed-delay with negative attempts', { strategy: 'fixed-delay', attempts: -1 }],
    ['exponential-delay with a multiplier below 1', { strategy: 'exponential-delay', multiplier: 0.5 }],
  ] as const)('rejects %s with JobDefinitionError', (_what, restart) => {
    expect(() => createJob({ name: 'bad-restart', restart })).toThrow(JobDefinitionError);
  });

  it('restarts a job without checkpointing from scratch, output exactly once', async () => {
    let failures = 0;
    const out = collect<number>();
    const job = createJob({ name: 'no-checkpoints', scheduler: skippingScheduler(), restart: { strategy: 'fixed-delay', attempts: 1, delay: 1 } });
    job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(
      map((n) => {
        if (n === 3 && failures++ === 0) throw new Error('flaky');
        return n;
      }),
      out.sink(),
    );
    expect((await job.start().done).restarts).toBe(1);
    expect(out.values).toEqual([1, 2, 3]);
  });
});
