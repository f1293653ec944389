// OpenTelemetry: a running job's metrics appear on metrics.getMeter('weir') for the application's own SDK, read
// here by an in-memory reader of @opentelemetry/sdk-metrics.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { pausableSource, readings, sumsJob } from '../checkpoint/fixtures';

/** A reader that collects only when the test asks (the SDK's in-memory pull). */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

let reader: TestReader;
let provider: MeterProvider;
beforeEach(() => {
  reader = new TestReader();
  provider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(provider);
});
afterEach(async () => {
  metrics.disable();
  await provider.shutdown();
});

async function collected(): Promise<Map<string, MetricData>> {
  const { resourceMetrics } = await reader.collect();
  const scope = resourceMetrics.scopeMetrics.find((s) => s.scope.name === 'weir');
  return new Map((scope?.metrics ?? []).map((metric) => [metric.descriptor.name, metric]));
}

function pointOf(metric: MetricData | undefined, attributes: Record<string, string>): number | undefined {
  const point = metric?.dataPoints.find((p) => Object.entries(attributes).every(([key, value]) => p.attributes[key] === value));
  return point?.value as number | undefined;
}

describe('OpenTelemetry metrics', () => {
  it('reports a running job through the global meter provider, with job, operator and worker attributes', async () => {
    const paused = pausableSource(readings, [50]);
    const running = sumsJob({ name: 'otel', checkpoints: {} }, paused.source).job.start();
    await paused.reached(50);
    await running.checkpoint();
    const found = await collected();
    expect(pointOf(found.get('weir_operator_records_in'), { job: 'otel', operator: 'sum', worker: '0' })).toBe(50);
    expect(pointOf(found.get('weir_operator_records_out'), { job: 'otel', operator: 'in', worker: '0' })).toBe(50);
    expect(pointOf(found.get('weir_operator_state_entries'), { job: 'otel', operator: 'sum' })).toBe(5);
    expect(pointOf(found.get('weir_checkpoints'), { job: 'otel', outcome: 'completed' })).toBe(1);
    expect(pointOf(found.get('weir_checkpoint_size_bytes'), { job: 'otel' })).toBeGreaterThan(0);
    expect(found.get('weir_operator_records_in')!.descriptor).toMatchObject({ unit: '{record}', description: 'Records that reached the operator' });
    paused.release(50);
    await running.done;
  });
});
