import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { registerPrometheusMetrics, startJob } from 'weir/node';
import type { KeyedSumSettings } from './jobs/keyedSum.js';

// Jobs on worker threads report their operators per worker: each worker sends its counters to the main thread, so
// that `running.metrics`, `/metrics` (label `worker`) and the live view show every worker's figures, and counters
// keep what earlier attempts counted after a restart.
const dir = mkdtempSync(join(tmpdir(), 'weir-worker-metrics-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keyedSum = new URL('./jobs/keyedSum.ts', import.meta.url);
const preload = [new URL('./registerTsx.mjs', import.meta.url)];

function settings(name: string, overrides: Partial<KeyedSumSettings> = {}): KeyedSumSettings {
  return { name, out: join(dir, `${name}.txt`), records: 2000, keys: 37, splits: 4, ...overrides };
}

/** The `weir_operator_records_in_total` series of operator `uid`, by worker. */
function recordsInByWorker(text: string, uid: string): Record<string, number> {
  const series = Array.from(text.matchAll(new RegExp(`^weir_operator_records_in_total\\{(.*operator="${uid}".*)\\} (\\d+)$`, 'gm')), (match) => [/worker="(\d+)"/.exec(match[1]!)![1]!, Number(match[2])] as const);
  return Object.fromEntries(series);
}

describe('metrics of a job on worker threads', () => {
  it('labels each operator with the workers that run it, in running.metrics, /metrics and the live view', async () => {
    process.env.WEIR_TEST_JOB = JSON.stringify(settings('worker-metrics', { checkpoints: 'memory' }));
    const running = await startJob(keyedSum, { workers: 2, preload });
    await running.done;
    const { workers, operators } = running.metrics;
    expect(workers?.map((w) => w.worker)).toEqual(['0', '1']);
    const sumIn = workers!.map((w) => w.operators.find((o) => o.uid === 'sum')!.recordsIn);
    // Worker i runs instance i of the keyed sum: both got some of the 37 keys, together every record once.
    expect(sumIn.every((count) => count > 0)).toBe(true);
    expect(sumIn[0]! + sumIn[1]!).toBe(2000);
    expect(operators.find((o) => o.uid === 'sum')!.recordsIn).toBe(2000);
    expect(operators.find((o) => o.uid === 'records')!.recordsOut).toBe(2000);
    // The final checkpoint's state of the sum, per worker as each instance wrote it.
    const stateBytes = workers!.map((w) => w.operators.find((o) => o.uid === 'sum')!.stateBytes);
    expect(stateBytes.every((bytes) => bytes! > 0)).toBe(true);
    expect(operators.find((o) => o.uid === 'sum')!.stateBytes).toBe(stateBytes[0]! + stateBytes[1]!);

    // A registry drops a job's series once it ends: this one reads the ended job's final figures.
    const registry = new Registry();
    registerPrometheusMetrics({ get metrics() { return running.metrics; } }, registry);
    expect(recordsInByWorker(await registry.metrics(), 'sum')).toEqual({ '0': sumIn[0], '1': sumIn[1] });
    const view = running.view();
    expect(view.workers).toBe(2);
    expect(view.operators.find((o) => o.uid === 'sum')).toMatchObject({ recordsIn: 2000, parallelism: 2, workers: [0, 1] });
    expect(view.operators.find((o) => o.uid === 'out')).toMatchObject({ recordsIn: 2000, workers: [0] });
  });

  it('keeps counting across a restart: counters only grow', async () => {
    const marker = join(dir, 'failed-once');
    process.env.WEIR_TEST_JOB = JSON.stringify(settings('worker-metrics-restart', { checkpoints: 'memory', failAt: { value: 1500, how: 'throw', marker } }));
    const running = await startJob(keyedSum, { workers: 2, preload });
    const result = await running.done;
    expect(result.restarts).toBe(1);
    const { workers, operators } = running.metrics;
    // No checkpoint completed before the failure, so the second attempt reads everything again: what the first
    // attempt counted (each worker reports it as it fails) counts on top.
    expect(operators.find((o) => o.uid === 'records')!.recordsOut).toBeGreaterThan(2000);
    expect(workers!.every((w) => w.operators.find((o) => o.uid === 'sum')!.recordsIn > 0)).toBe(true);
  });
});
