// Prometheus: registerPrometheusMetrics and the queryable state server's /metrics, parsed with a Prometheus
// text-format parser; every metric weir documents is there, with the job, operator and worker labels.
import { afterEach, describe, expect, it } from 'vitest';
import parsePrometheusTextFormat, { type PrometheusFamily } from 'parse-prometheus-text-format';
import { Registry } from 'prom-client';
import { assignTimestamps, collect, createJob, fromArray, keyBy, memoryCheckpointStorage, reduce, type RunningJob } from 'weir';
import { registerPrometheusMetrics, serveQueryableState, type QueryableStateServer } from 'weir/node';
import { pausableSource, readings, sumsJob, type Reading } from '../../checkpoint/fixtures';

const OPERATOR_METRICS = [
  'weir_operator_records_in_total',
  'weir_operator_records_out_total',
  'weir_source_busy_seconds_total',
  'weir_source_idle_seconds_total',
  'weir_source_backpressured_seconds_total',
  'weir_source_lag_records',
  'weir_operator_watermark_milliseconds',
  'weir_operator_watermark_lag_seconds',
  'weir_operator_state_entries',
  'weir_operator_state_checkpointed_bytes',
  'weir_operator_checkpoint_alignment_seconds',
];
const JOB_METRICS = [
  'weir_job_restarts_total',
  'weir_checkpoints_total',
  'weir_checkpoint_duration_seconds',
  'weir_checkpoint_size_bytes',
  'weir_checkpoint_full_size_bytes',
  'weir_checkpoint_alignment_seconds',
];

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.map((fn) => fn()));
  cleanup = [];
});

function families(text: string): Map<string, PrometheusFamily> {
  return new Map(parsePrometheusTextFormat(text).map((family) => [family.name, family]));
}

/** The value of `name`'s series whose labels include `labels`. */
function valueOf(parsed: Map<string, PrometheusFamily>, name: string, labels: Record<string, string>): number | undefined {
  const sample = parsed.get(name)?.metrics.find((m) => Object.entries(labels).every(([key, value]) => m.labels?.[key] === value));
  return sample === undefined ? undefined : Number(sample.value);
}

describe('registerPrometheusMetrics', () => {
  it('reports every metric with job, operator and worker labels, with the values the job counted', async () => {
    const job = createJob({ name: 'scraped', chunkSize: 10, checkpoints: { storage: memoryCheckpointStorage() } });
    job
      .source(fromArray(readings), { uid: 'in' })
      .pipe(
        assignTimestamps((r: Reading) => r.n * 1000, { interval: 0, uid: 'timestamps' }),
        keyBy((r) => r.key),
        reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
        collect<Reading>().sink({ uid: 'out' }),
      );
    const running = job.start();
    await running.done;
    const registry = new Registry();
    // Without `done` the series stay after the job ended, so they can be read here.
    registerPrometheusMetrics({ get metrics() { return running.metrics; } }, registry);
    const parsed = families(await registry.metrics());

    for (const name of OPERATOR_METRICS) {
      const family = parsed.get(name);
      expect(family, name).toBeDefined();
      expect(family!.type, name).toBe(name.endsWith('_total') ? 'COUNTER' : 'GAUGE');
      expect(family!.metrics.length, name).toBeGreaterThan(0);
      for (const { labels } of family!.metrics) expect(labels, name).toEqual({ job: 'scraped', operator: expect.any(String), worker: '0' });
    }
    for (const name of JOB_METRICS) {
      const family = parsed.get(name);
      expect(family, name).toBeDefined();
      expect(family!.metrics.length, name).toBeGreaterThan(0);
      for (const { labels } of family!.metrics) expect(labels, name).toMatchObject({ job: 'scraped', worker: '0' });
    }
    expect(valueOf(parsed, 'weir_operator_records_in_total', { operator: 'sum' })).toBe(100);
    expect(valueOf(parsed, 'weir_operator_records_out_total', { operator: 'in' })).toBe(100);
    expect(valueOf(parsed, 'weir_source_lag_records', { operator: 'in' })).toBe(0);
    expect(valueOf(parsed, 'weir_checkpoints_total', { outcome: 'completed' })).toBe(1);
    expect(valueOf(parsed, 'weir_checkpoints_total', { outcome: 'failed' })).toBe(0);
    expect(valueOf(parsed, 'weir_checkpoint_size_bytes', {})).toBe(running.checkpoints[0]!.bytes);
    expect(valueOf(parsed, 'weir_job_restarts_total', {})).toBe(0);
  });

  it('lets several jobs share a registry, and drops a job when it ends', async () => {
    const registry = new Registry();
    const paused = pausableSource(readings, [50]);
    const a = sumsJob({ name: 'a', checkpoints: {} }, paused.source).job.start();
    const b = sumsJob({ name: 'b' }, fromArray(readings)).job.start();
    registerPrometheusMetrics(a, registry);
    registerPrometheusMetrics(b, registry);
    await b.done;
    await paused.reached(50);
    await a.checkpoint();
    const parsed = families(await registry.metrics());
    expect(valueOf(parsed, 'weir_operator_records_in_total', { job: 'a', operator: 'sum' })).toBe(50);
    expect(valueOf(parsed, 'weir_operator_records_in_total', { job: 'b', operator: 'sum' })).toBeUndefined();
    paused.release(50);
    await a.done;
  });
});

describe('serveQueryableState({ metrics: true })', () => {
  /** The sums job paused after 50 readings and checkpointed, served with /metrics. */
  async function served(options: { token?: string } = {}): Promise<{ running: RunningJob; server: QueryableStateServer }> {
    const paused = pausableSource(readings, [50]);
    const running = sumsJob({ name: 'served', checkpoints: {} }, paused.source).job.start();
    await paused.reached(50);
    await running.checkpoint();
    const server = await serveQueryableState(running, { port: 0, metrics: true, ...options });
    cleanup.push(async () => {
      await server.close();
      paused.releaseAll();
      await running.done;
    });
    return { running, server };
  }

  it('serves the Prometheus text format at /metrics, with every metric', async () => {
    const { server } = await served();
    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const parsed = families(await response.text());
    for (const name of [...OPERATOR_METRICS, ...JOB_METRICS]) expect(parsed.has(name), name).toBe(true);
    expect(valueOf(parsed, 'weir_operator_records_in_total', { job: 'served', operator: 'sum', worker: '0' })).toBe(50);
    expect(valueOf(parsed, 'weir_operator_state_entries', { job: 'served', operator: 'sum' })).toBe(5);
    expect(valueOf(parsed, 'weir_checkpoints_total', { job: 'served', outcome: 'completed' })).toBe(1);
  });

  it('asks for the token on /metrics too', async () => {
    const { server } = await served({ token: 'secret' });
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer secret' } })).status).toBe(200);
  });

  it('has no /metrics unless asked', async () => {
    const paused = pausableSource(readings, [50]);
    const running = sumsJob({ name: 'unserved' }, paused.source).job.start();
    const server = await serveQueryableState(running, { port: 0 });
    cleanup.push(async () => {
      await server.close();
      paused.releaseAll();
      await running.done;
    });
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
  });
});
