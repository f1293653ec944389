// The live job view's data, `GET /v1/job` on the queryable state server: a real job with a failed checkpoint (a
// storage that fails a write), a savepoint, a restart from a thrown error and a completed checkpoint, each visible
// with its reason and time; the graph with its edges and rates; Flink's min/avg/max summary and each operator's
// alignment, sync and async times.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { map, memoryCheckpointStorage, type JobView } from 'weir';
import { serveQueryableState, type QueryableStateServer } from 'weir/node';
import { pausableSource, readings, sumsJob, type Reading } from '../checkpoint/fixtures';
import { failingWritesOf } from '../support/faultyStorage';

let server: QueryableStateServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});


async function getView(url: string, token: string): Promise<JobView> {
  const response = await fetch(`${url}/v1/job`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/application\/json/);
  return (await response.json()) as JobView;
}

describe('live job view (GET /v1/job)', () => {
  it('shows the graph with rates, a failed checkpoint, a savepoint and a restart with reasons and times', async () => {
    const paused = pausableSource(readings, [30, 90]);
    const storage = failingWritesOf(memoryCheckpointStorage(), /chk-1\/sum\./);
    let thrown = 0;
    const flaky = map((r: Reading) => {
      if (r.n === 70 && thrown++ === 0) throw new Error('flaky reading 70');
      return r;
    }, { uid: 'flaky' });
    const { job } = sumsJob(
      { name: 'live-view', checkpoints: { storage, tolerableFailures: 1 }, restart: { strategy: 'fixed-delay', attempts: 1, delay: 5 } },
      paused.source,
      undefined,
      (flow) => flow.pipe(flaky),
    );
    const startedAt = Date.now();
    const running = job.start();
    server = await serveQueryableState(running, { port: 0, token: 'secret' });

    // Unauthorised without the token, like every other route.
    expect((await fetch(`${server.url}/v1/job`)).status).toBe(401);

    await paused.reached(30);
    await expect(running.checkpoint()).rejects.toThrow(/ENOSPC/);
    const savepoint = await running.savepoint({ path: 'savepoints' });
    let view = await getView(server.url, 'secret');
    expect(view.job).toBe('live-view');
    expect(view.operators.map((o) => [o.uid, o.kind, o.inputs])).toEqual([
      ['in', 'source', []],
      ['flaky', 'map', ['in']],
      ['sum', 'reduce', ['flaky']],
      ['out', 'sink', ['sum']],
    ]);
    const source = view.operators[0]!;
    expect(source.recordsOut).toBe(30);
    expect(source.recordsOutPerSecond).toBeGreaterThan(0);
    expect(source.busyRatio).toBeGreaterThanOrEqual(0);
    expect(source.backpressuredRatio).toBeGreaterThanOrEqual(0);
    expect(view.operators[2]!.recordsInPerSecond).toBeGreaterThan(0);
    expect(view.checkpoints).toEqual([
      expect.objectContaining({ id: 1, kind: 'checkpoint', status: 'failed', reason: expect.stringMatching(/^ENOSPC: no space left on device, write '.*chk-1\/sum\./) }),
      expect.objectContaining({ id: 2, kind: 'savepoint', status: 'completed', path: savepoint.path }),
    ]);
    expect(view.counts).toEqual({ completed: 1, failed: 1, aborted: 0 });
    expect(view.events).toEqual([{ type: 'savepoint', at: savepoint.timestamp + savepoint.durationMs, checkpoint: 2, status: 'completed', path: savepoint.path }]);
    expect(view.events[0]!.at).toBeGreaterThanOrEqual(startedAt);

    // On to record 70, which throws once: the job restarts, and reads on to 90 in its second attempt.
    paused.release(30);
    await paused.reached(90);
    const completed = await running.checkpoint();
    view = await getView(server.url, 'secret');
    expect(view.restarts).toBe(1);
    const restart = view.events.find((event) => event.type === 'restart');
    expect(restart).toMatchObject({ type: 'restart', restarts: 1, reason: expect.stringMatching(/flaky reading 70/), afterCheckpoint: 2 });
    expect(restart!.at).toBeGreaterThanOrEqual(view.events.find((event) => event.type === 'savepoint')!.at);
    expect(view.events.map((event) => event.type)).toEqual(['savepoint', 'restart']);
    expect(view.checkpoints.at(-1)).toMatchObject({ id: completed.id, status: 'completed', kind: 'checkpoint' });

    // Flink's checkpoint statistics over the completed ones (the savepoint and the checkpoint).
    const sizes = [savepoint.bytes, completed.bytes];
    expect(view.summary?.bytes).toEqual({ min: Math.min(...sizes), avg: (sizes[0]! + sizes[1]!) / 2, max: Math.max(...sizes) });
    const durations = [savepoint.durationMs, completed.durationMs];
    expect(view.summary?.durationMs).toEqual({ min: Math.min(...durations), avg: (durations[0]! + durations[1]!) / 2, max: Math.max(...durations) });
    expect(view.summary?.alignmentMs.min).toBeGreaterThanOrEqual(0);
    // Each stateful operator's part in the latest checkpoint, as its _metadata records it.
    const sum = view.operators.find((o) => o.uid === 'sum')!;
    const recorded = completed.operators.find((o) => o.uid === 'sum')!;
    expect(sum.checkpoint).toEqual({ id: completed.id, alignmentMs: recorded.alignmentMs, syncMs: recorded.syncMs, asyncMs: recorded.asyncMs, bytes: recorded.bytes });
    expect(sum.checkpoint!.bytes).toBeGreaterThan(0);
    expect(view.operators.find((o) => o.uid === 'flaky')!.checkpoint).toBeUndefined();

    paused.release(90);
    await running.done;
    // The view outlives the run: the whole history is still there, and nothing flows any more.
    view = running.view();
    expect(view.checkpoints.map((c) => [c.id, c.status])).toEqual([
      [1, 'failed'],
      [2, 'completed'],
      [3, 'completed'],
      [4, 'completed'],
    ]);
    expect(view.workers).toBeUndefined();
  });

  it('refuses liveView without a built page, naming the missing file and the way out', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'weir-live-view-'));
    try {
      const paused = pausableSource(readings, [10]);
      const running = sumsJob({ name: 'live-view-no-page' }, paused.source).job.start();
      await expect(serveQueryableState(running, { port: 0, liveView: { uiDir: empty } })).rejects.toThrow(
        new RegExp(`liveView finds no built page \\(${join(empty, 'job.html').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is missing\\): build weir \\(npm run build`),
      );
      paused.releaseAll();
      await running.done;
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
