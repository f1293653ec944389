// Job events on Node's diagnostics_channel (published once weir/node is imported): a restart, a failed checkpoint
// and a savepoint each appear there, named after their job.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { createJob, fromArray, map, collect, memoryCheckpointStorage, type JobEvent } from 'weir';
import { WEIR_CHANNELS } from 'weir/node';
import { pausableSource, readings, skippingScheduler, sumsJob, type Reading } from '../checkpoint/fixtures';
import { failingWritesOf } from '../support/faultyStorage';

let subscriptions: [string, (message: unknown) => void][] = [];
afterEach(() => {
  for (const [name, listener] of subscriptions) unsubscribe(name, listener);
  subscriptions = [];
});

/** Every event published on the channels while the test runs, in order, for job `job`. */
function listen(job: string): JobEvent[] {
  const events: JobEvent[] = [];
  for (const name of Object.values(WEIR_CHANNELS)) {
    const listener = (message: unknown) => {
      if ((message as JobEvent).job === job) events.push(message as JobEvent);
    };
    subscribe(name, listener);
    subscriptions.push([name, listener]);
  }
  return events;
}


describe('diagnostics_channel', () => {
  it('names its channels weir:<event>', () => {
    expect(WEIR_CHANNELS).toEqual({
      'job:start': 'weir:job:start',
      restore: 'weir:restore',
      'checkpoint:complete': 'weir:checkpoint:complete',
      'checkpoint:failed': 'weir:checkpoint:failed',
      savepoint: 'weir:savepoint',
      restart: 'weir:restart',
      'job:stop': 'weir:job:stop',
    });
  });

  it('publishes a restart with its cause, between the start and the stop', async () => {
    const events = listen('restart-events');
    let failures = 0;
    const flaky = new Error('flaky');
    const job = createJob({ name: 'restart-events', scheduler: skippingScheduler(), restart: { strategy: 'fixed-delay', attempts: 1, delay: 5 } });
    job
      .source(fromArray(readings), { uid: 'in' })
      .pipe(
        map((r: Reading) => {
          if (r.n === 70 && failures++ === 0) throw flaky;
          return r;
        }, { uid: 'flaky' }),
        collect<Reading>().sink({ uid: 'out' }),
      );
    await job.start().done;
    expect(events.map((e) => e.type)).toEqual(['job:start', 'restart', 'job:stop']);
    const restart = events[1] as Extract<JobEvent, { type: 'restart' }>;
    expect(restart).toMatchObject({ job: 'restart-events', restarts: 1, delayMs: 5 });
    expect((restart.cause as Error).message).toMatch(/flaky/);
    expect(events[2]).toMatchObject({ type: 'job:stop', result: { status: 'finished', restarts: 1 } });
  });

  it('publishes a failed checkpoint with its reason, and the completed ones', async () => {
    const events = listen('sums');
    const paused = pausableSource(readings, [50]);
    const storage = failingWritesOf(memoryCheckpointStorage(), /chk-1\/sum\./);
    const { job } = sumsJob({ checkpoints: { storage, tolerableFailures: 1 } }, paused.source);
    const running = job.start();
    await paused.reached(50);
    await expect(running.checkpoint()).rejects.toThrow(/ENOSPC/);
    paused.release(50);
    await running.done;
    const failed = events.filter((e) => e.type === 'checkpoint:failed');
    expect(failed).toEqual([expect.objectContaining({ job: 'sums', reason: expect.stringMatching(/^ENOSPC: no space left on device/), checkpoint: expect.objectContaining({ id: 1, status: 'failed' }) })]);
    expect(events.filter((e) => e.type === 'checkpoint:complete')).toEqual([expect.objectContaining({ checkpoint: expect.objectContaining({ id: 2, final: true }) })]);
  });

  it('publishes a savepoint, and the restore of it by the next run', async () => {
    const storage = memoryCheckpointStorage();
    const events = listen('sums');
    const paused = pausableSource(readings, [50]);
    const first = sumsJob({ checkpoints: { storage } }, paused.source).job.start();
    await paused.reached(50);
    const savepoint = await first.savepoint({ path: 'savepoints' });
    await first.cancel();
    expect(events.filter((e) => e.type === 'savepoint')).toEqual([expect.objectContaining({ job: 'sums', checkpoint: expect.objectContaining({ path: savepoint.path, kind: 'savepoint' }) })]);

    events.length = 0;
    await sumsJob({ checkpoints: { storage } }, pausableSource(readings, []).source).job.start({ restore: { savepoint: savepoint.path } }).done;
    expect(events.find((e) => e.type === 'restore')).toMatchObject({ restoredFrom: { path: savepoint.path, kind: 'savepoint' }, restart: false });
  });
});
