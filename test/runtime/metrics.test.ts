// running.metrics: the counters the engine keeps per operator, read while a job runs and after it ended.
import { describe, expect, it } from 'vitest';
import { assignTimestamps, collect, createJob, fromArray, keyBy, map, memoryCheckpointStorage, reduce, unionWith, type Source } from 'weir';
import { pausableSource, readings, sumsJob, type Reading } from '../checkpoint/fixtures';

describe('running.metrics', () => {
  it('counts records in and out per operator, state entries and bytes, and checkpoint outcomes while the job runs', async () => {
    const paused = pausableSource(readings, [50]);
    const { job } = sumsJob({ checkpoints: { storage: memoryCheckpointStorage() } }, paused.source);
    const running = job.start();
    await paused.reached(50);
    const checkpoint = await running.checkpoint();
    const { job: name, worker, restarts, operators, checkpoints } = running.metrics;
    expect({ name, worker, restarts }).toEqual({ name: 'sums', worker: '0', restarts: 0 });
    const byUid = Object.fromEntries(operators.map((o) => [o.uid, o]));
    expect(operators.map((o) => o.uid)).toEqual(['in', 'sum', 'out']);
    expect(byUid.in).toMatchObject({ recordsIn: 0, recordsOut: 50 });
    // reduce emits the key's new sum for every record.
    expect(byUid.sum).toMatchObject({ recordsIn: 50, recordsOut: 50, stateEntries: 5 });
    expect(byUid.out).toMatchObject({ recordsIn: 50, recordsOut: 0 });
    expect(byUid.sum!.stateBytes).toBeGreaterThan(0);
    // Only sources measure busy, idle and backpressured time.
    expect(byUid.in!.busyMs).toBeGreaterThanOrEqual(0);
    expect(byUid.in!.idleMs).toBeGreaterThanOrEqual(0);
    expect(byUid.in!.backpressuredMs).toBe(0);
    expect(byUid.sum!.busyMs).toBeUndefined();
    expect(checkpoints).toMatchObject({ completed: 1, failed: 0, aborted: 0, latest: { id: checkpoint.id, bytes: checkpoint.bytes } });
    paused.release(50);
    await running.done;
    const after = running.metrics;
    expect(after.operators.find((o) => o.uid === 'sum')).toMatchObject({ recordsIn: 100, recordsOut: 100 });
    // The final checkpoint completed too.
    expect(after.checkpoints.completed).toBe(2);
  });

  it('reports watermarks and their lag behind the job clock, and how far an in-memory source is from its end', async () => {
    const job = createJob({ name: 'watermarks', chunkSize: 10 });
    const out = collect<Reading>();
    job
      .source(fromArray(readings), { uid: 'in' })
      .pipe(
        assignTimestamps((r: Reading) => r.n * 1000, { interval: 0, uid: 'timestamps' }),
        map((r: Reading) => r, { uid: 'identity' }),
        keyBy((r) => r.key),
        reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
        out.sink({ uid: 'out' }),
      );
    const running = job.start();
    await running.done;
    const byUid = Object.fromEntries(running.metrics.operators.map((o) => [o.uid, o]));
    expect(byUid.in!.sourceLag).toBe(0);
    expect(byUid.in!.recordsOut).toBe(100);
    expect(byUid.timestamps).toMatchObject({ recordsIn: 100, recordsOut: 100 });
    expect(byUid.identity).toMatchObject({ recordsIn: 100, recordsOut: 100 });
    expect(byUid.sum!.watermark).toBeDefined();
    expect(byUid.sum!.watermarkLagMs).toBeGreaterThanOrEqual(0);
  });

  it("reports the lag a source's reader knows", async () => {
    // A reader over 10 numbers that, like a broker consumer, knows how many are left; it pauses after 4 until told.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const atFour = new Promise<void>((resolve) => (reached = resolve));
    let sent = 0;
    const source: Source<number> = {
      name: 'counting',
      replayable: false,
      open: () => ({
        read: () => {
          if (sent !== 4) return sent === 10 ? null : [sent++];
          reached();
          return held.then(() => [sent++]);
        },
        offset: () => sent,
        lag: () => 10 - sent,
      }),
    };
    const job = createJob({ name: 'lagging', checkpoints: {} });
    job.source(source, { uid: 'counting' }).pipe(collect<number>().sink({ uid: 'out' }));
    const running = job.start();
    await atFour;
    expect(running.metrics.operators.find((o) => o.uid === 'counting')!.sourceLag).toBe(6);
    release();
    await running.done;
    expect(running.metrics.operators.find((o) => o.uid === 'counting')!.sourceLag).toBe(0);
  });

  it('counts the records of an operator with several inputs, and of the operators after it', async () => {
    const job = createJob({ name: 'two-inputs', chunkSize: 10 });
    const web = job.source(fromArray(readings.slice(0, 30)), { uid: 'web' });
    const app = job.source(fromArray(readings.slice(30)), { uid: 'app' });
    unionWith({ uid: 'both' }, web, app).pipe(map((r: Reading) => r, { uid: 'after' }), collect<Reading>().sink({ uid: 'out' }));
    const running = job.start();
    await running.done;
    const byUid = Object.fromEntries(running.metrics.operators.map((o) => [o.uid, o]));
    expect(byUid.web!.recordsOut).toBe(30);
    expect(byUid.app!.recordsOut).toBe(70);
    expect(byUid.both).toMatchObject({ recordsIn: 100, recordsOut: 100 });
    expect(byUid.after).toMatchObject({ recordsIn: 100, recordsOut: 100 });
  });

  it('keeps counting across a restart (counts only grow) and counts the restart', async () => {
    let failures = 0;
    const job = createJob({ name: 'restarting', chunkSize: 10, restart: { strategy: 'fixed-delay', attempts: 1, delay: 1 } });
    job
      .source(fromArray(readings), { uid: 'in' })
      .pipe(
        map((r: Reading) => {
          if (r.n === 70 && failures++ === 0) throw new Error('flaky');
          return r;
        }, { uid: 'flaky' }),
        collect<Reading>().sink({ uid: 'out' }),
      );
    const running = job.start();
    await running.done;
    const { restarts, operators } = running.metrics;
    expect(restarts).toBe(1);
    // Without checkpoints the restart starts over: 70 records reached the map before it failed, then all 100.
    expect(operators.find((o) => o.uid === 'flaky')!.recordsIn).toBe(171);
    expect(operators.find((o) => o.uid === 'out')!.recordsIn).toBe(170);
  });
});
