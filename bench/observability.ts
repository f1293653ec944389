import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import { createJob, forEach, fromArray, heapStateBackend, keyBy, reduce } from 'weir';
import { registerPrometheusMetrics } from 'weir/node';
import { addEvents, makeEvents, noop, perSecond, sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const EVENTS = Number(process.env.WEIR_BENCH_OBSERVABILITY_EVENTS ?? 5_000_000);
const KEYS = 10_000;
/** A scrape a second, as Prometheus' usual interval is 15 s at best: a second is a harsh case. */
const SCRAPE_EVERY_MS = 1_000;

/** An OpenTelemetry reader that collects when told (as a periodic exporter would, without exporting anywhere). */
class PullReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/**
 * The keyed reduce of bench/keyedReduce.ts; with `scraped`, its metrics are registered with prom-client and an
 * OpenTelemetry SDK, and both are collected every second while it runs (the text rendered, as for a real scrape).
 */
async function keyedReduce(events: KeyedEvent[], scraped: boolean): Promise<number> {
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  if (scraped) metrics.setGlobalMeterProvider(provider);
  const start = performance.now();
  const job = createJob({ name: 'bench-observability', stateBackend: heapStateBackend() });
  job.source(fromArray(events), { uid: 'events' }).pipe(keyBy((e) => e.key), reduce(addEvents, { uid: 'sum' }), forEach(noop));
  const running = job.start();
  const registry = new Registry();
  const timer = scraped
    ? setInterval(() => {
        void registry.metrics();
        void reader.collect();
      }, SCRAPE_EVERY_MS)
    : undefined;
  if (scraped) registerPrometheusMetrics(running, registry);
  await running.done;
  const rate = perSecond(events.length, performance.now() - start);
  clearInterval(timer);
  metrics.disable();
  await provider.shutdown();
  if (scraped && running.metrics.operators.find((o) => o.uid === 'sum')?.recordsIn !== events.length) throw new Error('observability bench: the job did not count every event');
  return rate;
}

/**
 * `observability`: what metrics cost a keyed reduce of 5M events. weir's counters are always kept (a field increment
 * per record and operator, read only by a scrape), so "without" is the job nobody scrapes, and "with" the same job
 * registered with prom-client and an OpenTelemetry SDK, both collected every second.
 */
export async function observability(): Promise<Result[]> {
  const events = makeEvents(EVENTS, KEYS);
  const best = await sideBySide({ without: () => keyedReduce(events, false), with: () => keyedReduce(events, true) }, { rounds: 3, best: 'max' });
  return [
    { name: 'observability/throughput-without-metrics', value: best.without, unit: 'events/s' },
    { name: 'observability/throughput-with-metrics', value: best.with, unit: 'events/s' },
    { name: 'observability/throughput-with-metrics-vs-without', value: best.with / best.without, unit: 'ratio', bar: { op: '>=', value: 0.95 } },
  ];
}
