import type * as PromClient from 'prom-client';
import type { Counter, Gauge, Registry } from 'prom-client';
import { lazyRequire } from '../lazyRequire.js';
import type { JobMetrics } from '../../runtime/jobMetrics.js';
import { METRIC_SPECS } from '../../runtime/metricSpecs.js';

/** What `registerPrometheusMetrics` reads: a running job (`job.start()`). */
export interface MetricsSource {
  readonly metrics: JobMetrics;
  /** When it settles, the job's series are dropped. */
  readonly done?: Promise<unknown>;
}

/** prom-client, loaded when metrics are first registered, not in every worker thread that imports weir/node. */
export const promClient = lazyRequire<typeof PromClient>('prom-client');

/** The jobs each registry reports, so that several jobs share one set of metrics (prom-client names are unique). */
const jobsOf = new WeakMap<Registry, Set<MetricsSource>>();

/**
 * Adds a running job's metrics to a prom-client registry (the default one unless given), read from the job's
 * counters at each scrape: `weir_operator_records_in_total`, `weir_checkpoints_total{outcome}`, … (the README's
 * "Metrics and monitoring" lists them), labelled `job`, `operator` (the uid) and `worker`. Several jobs can share a
 * registry. The job's series go when it ends or when the returned function is called.
 * @example
 * import { register } from 'prom-client';
 * import { registerPrometheusMetrics } from 'weir/node';
 * const running = job.start();
 * registerPrometheusMetrics(running);          // then serve `await register.metrics()`, or:
 * await serveQueryableState(running, { port: 9870, metrics: true });   // GET /metrics
 */
export function registerPrometheusMetrics(running: MetricsSource, registry: Registry = promClient().register): () => void {
  let jobs = jobsOf.get(registry);
  if (jobs === undefined) {
    jobsOf.set(registry, (jobs = new Set()));
    addMetrics(registry, jobs);
  }
  jobs.add(running);
  const forget = () => void jobs.delete(running);
  running.done?.then(forget, forget);
  return forget;
}

function addMetrics(registry: Registry, jobs: Set<MetricsSource>): void {
  for (const spec of METRIC_SPECS) {
    const configuration = { name: spec.kind === 'counter' ? `${spec.name}_total` : spec.name, help: spec.description, labelNames: spec.labels, registers: [registry] };
    // Each scrape rebuilds the series from the jobs' counters: a series whose value is unknown is left out.
    const readings = () => [...jobs].flatMap((job) => [...spec.read(job.metrics)]).filter((reading): reading is [number, Record<string, string>] => reading[0] !== undefined);
    if (spec.kind === 'counter') {
      new (promClient().Counter)({
        ...configuration,
        collect(this: Counter) {
          this.reset();
          for (const [value, labels] of readings()) this.inc(labels, value);
        },
      });
    } else {
      new (promClient().Gauge)({
        ...configuration,
        collect(this: Gauge) {
          this.reset();
          for (const [value, labels] of readings()) this.set(labels, value);
        },
      });
    }
  }
}
