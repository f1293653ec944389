// weir/browser's startJob on module Web Workers in real Chromium: the same keyed sum on 2 workers, 1 worker and one
// thread; an IndexedDB checkpoint taken with 2 workers restored with 1; a throw in a worker restarted from the
// latest checkpoint. Output is compared line for line, exactly once.
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_PARALLELISM, keyGroupOf, keyGroupRangeFor, type RunningJob } from 'weir';
import { startJob } from 'weir/browser';
import { freshDbName } from './idbFixtures';
import { keyedSum, type Batch, type KeyedSumSettings } from './workers/keyedSum';

let runs = 0;
const channels: BroadcastChannel[] = [];
afterEach(() => channels.splice(0).forEach((channel) => channel.close()));

/** The settings of a fresh run, with its own output channel: 2400 records, 24 keys of 100, 4 splits of 6 keys. */
function settings(overrides: Partial<KeyedSumSettings> = {}): KeyedSumSettings {
  return { name: `browser-sum-${++runs}-${crypto.randomUUID()}`, records: 2400, keys: 24, splits: 4, ...overrides };
}

/** What the job publishes on its channel: one batch per id (a restored attempt publishes its restored ones again). */
function output(name: string) {
  const channel = new BroadcastChannel(name);
  channels.push(channel);
  const batches = new Map<Batch['batch'], string[]>();
  let ended!: () => void;
  const end = new Promise<void>((resolve) => (ended = resolve));
  channel.onmessage = (event: MessageEvent<Batch>) => {
    batches.set(event.data.batch, event.data.lines);
    if (event.data.batch === 'end') ended();
  };
  return { end, lines: () => [...batches.values()].flat().sort() };
}

/** Every running sum, computed here: each key's records come in index order, within its own split. */
function expected({ records, keys }: KeyedSumSettings): string[] {
  const perKey = records / keys;
  const sums = new Map<string, number>();
  const lines: string[] = [];
  for (let i = 0; i < records; i++) {
    const key = `k${Math.floor(i / perKey)}`;
    sums.set(key, (sums.get(key) ?? 0) + i);
    lines.push(`${key}=${sums.get(key)!}`);
  }
  return lines.sort();
}

/** The module worker factory of the tests: the job's settings travel in the worker's name; spawns are counted. */
function workerFactory(job: KeyedSumSettings, firstAttempt: Partial<KeyedSumSettings> = {}, workers = 2) {
  let spawned = 0;
  return () => {
    const settingsHere = spawned++ < workers ? { ...job, ...firstAttempt } : job;
    return new Worker(new URL('./workers/keyedSum.worker.ts', import.meta.url), { type: 'module', name: JSON.stringify(settingsHere) });
  };
}

async function runToEnd(job: KeyedSumSettings, start: () => RunningJob) {
  const out = output(job.name);
  const result = await start().done;
  await out.end;
  return { result, lines: out.lines() };
}

describe('startJob on module Web Workers', { timeout: 240_000 }, () => {
  it('computes with 2 workers exactly what 1 worker and one thread compute', async () => {
    const two = settings({ checkpoints: 'memory' });
    const one = settings({ checkpoints: 'memory' });
    const thread = settings({ checkpoints: 'memory' });
    const onTwo = await runToEnd(two, () => startJob(keyedSum(two), { workers: 2, worker: workerFactory(two) }));
    const onOne = await runToEnd(one, () => startJob(keyedSum(one), { workers: 1, worker: workerFactory(one, {}, 1) }));
    const onThread = await runToEnd(thread, () => keyedSum(thread)({ workers: 1, worker: undefined }).start());
    expect(onTwo.result.status).toBe('finished');
    expect(onTwo.lines).toEqual(expected(two));
    expect(onOne.lines).toEqual(onTwo.lines);
    expect(onThread.lines).toEqual(onTwo.lines);
  });

  it('restores with 1 worker an IndexedDB checkpoint taken with 2, each record once', async () => {
    // The first run's workers wait after 300 records of their first split: it checkpoints mid-input, and is cancelled there.
    const job = settings({ checkpoints: freshDbName(), chunkSize: 8 });
    const out = output(job.name);
    const first = startJob(keyedSum(job), { workers: 2, worker: workerFactory(job, { holdAfter: 300 }) });
    const taken = await first.checkpoint();
    expect(taken.path).toMatch(/^indexeddb:\/\//);
    const cancelled = await first.cancel();
    expect(cancelled.status).toBe('cancelled');

    const second = startJob(keyedSum(job), { workers: 1, worker: workerFactory(job, {}, 1), restore: 'latest' });
    const result = await second.done;
    await out.end;
    expect(result.status).toBe('finished');
    expect(result.restoredFrom).toBe(taken.path.replace(/^indexeddb:\/\/[^/]+\//, ''));
    expect(out.lines()).toEqual(expected(job));
  });

  it("restarts from the latest checkpoint after a worker's user function throws, output exactly once", async () => {
    // The first attempt's workers wait after 300 records of their first split until a checkpoint has completed; then
    // they go on, and the throw comes in worker 0's second split (record 1500 of [1200, 1800)).
    const job = settings({ checkpoints: freshDbName(), chunkSize: 8 });
    const out = output(job.name);
    const running = startJob(keyedSum(job), { workers: 2, worker: workerFactory(job, { failAt: 1500, holdAfter: 300 }) });
    const taken = await running.checkpoint();
    const control = new BroadcastChannel(`${job.name}-control`);
    channels.push(control);
    control.postMessage('release');
    const result = await running.done;
    await out.end;
    expect(result.status).toBe('finished');
    expect(result.restarts).toBe(1);
    expect(running.restoredFrom).toMatchObject({ kind: 'checkpoint' });
    expect(running.restoredFrom!.id).toBeGreaterThanOrEqual(taken.id);
    const lines = out.lines();
    expect(lines).toEqual(expected(job));
  });

  it('fails a worker that hangs once it sent nothing for heartbeatTimeout, and restarts every worker', async () => {
    // Record 1500 makes the first attempt's worker 0 loop for ever: no event reports that; only its silence does.
    const job = settings();
    const out = output(job.name);
    const running = startJob(keyedSum(job), { workers: 2, worker: workerFactory(job, { hangAt: 1500 }), heartbeatTimeout: 3_000 });
    const result = await running.done;
    await out.end;
    expect(result.status).toBe('finished');
    expect(result.restarts).toBe(1);
    const restarts = running.view().events.filter((event) => event.type === 'restart');
    expect(restarts).toHaveLength(1);
    expect(restarts[0]).toMatchObject({ reason: expect.stringMatching(/worker 0 sent nothing for \d+ ms \(heartbeatTimeout 3000 ms\): it hung/) });
    expect(out.lines()).toEqual(expected(job));
  });

  it('answers a query by key from the worker that owns the key', async () => {
    // Each worker reads its splits one after another, so its first split holds it: splits 0 (worker 0) and 1
    // (worker 1) stop after 300 records, with their first 3 keys (100 records each) complete.
    const job = settings({ checkpoints: 'memory', queryable: 'sums' });
    const running = startJob(keyedSum(job), { workers: 2, worker: workerFactory(job, { holdAfter: 300 }) });
    const sumOf = (key: number) => Array.from({ length: 100 }, (_, i) => key * 100 + i).reduce((a, b) => a + b, 0);
    const keys = [0, 1, 2, 6, 7, 8];
    // The key's group decides which worker's instance holds it, whichever worker read it: both own some of these.
    const owner = (key: number) => (keyGroupOf(`k${key}`, DEFAULT_MAX_PARALLELISM) <= keyGroupRangeFor(0, 2, DEFAULT_MAX_PARALLELISM).end ? 0 : 1);
    expect(new Set(keys.map(owner))).toEqual(new Set([0, 1]));
    for (const key of keys) {
      // Polled: the query waits for the splits to reach their hold, not for a time.
      await expect.poll(async () => (await running.query<{ key: string; value: number }>('sums', `k${key}`).catch(() => undefined))?.value, { timeout: 120_000, interval: 50 }).toBe(sumOf(key));
    }
    expect(await running.query('sums', 'no-such-key')).toBeUndefined();
    expect((await running.cancel()).status).toBe('cancelled');
  });
});
