import { metrics, type BatchObservableResult, type Meter } from '@opentelemetry/api';
import type { JobMetricsRecorder } from './jobMetrics.js';
import { METRIC_SPECS } from './metricSpecs.js';

/** The running jobs of this process whose metrics the OpenTelemetry instruments report. */
const live = new Set<JobMetricsRecorder>();
/** Meters weir's instruments are registered on: one per MeterProvider the application installed. */
const instrumented = new WeakSet<Meter>();

/**
 * Reports `recorder`'s job through the OpenTelemetry metrics API (`metrics.getMeter('weir')`) until `done` settles:
 * observable instruments read when the application's SDK collects, so nothing runs per record and nothing at all
 * without an SDK (the API's default meter does nothing). The meter is looked up at each job's start, as the API has
 * no proxy meter: an SDK installed before a job starts sees it.
 */
export function reportToOpenTelemetry(recorder: JobMetricsRecorder, done: Promise<unknown>): void {
  const meter = metrics.getMeter('weir');
  if (!instrumented.has(meter)) {
    instrumented.add(meter);
    const instruments = METRIC_SPECS.map((spec) => {
      const options = { description: spec.description, unit: spec.unit };
      const instrument = spec.kind === 'counter' ? meter.createObservableCounter(spec.name, options) : meter.createObservableGauge(spec.name, options);
      return { spec, instrument };
    });
    meter.addBatchObservableCallback(
      (result: BatchObservableResult) => {
        for (const job of live) {
          const snapshot = job.snapshot();
          for (const { spec, instrument } of instruments) {
            for (const [value, attributes] of spec.read(snapshot)) if (value !== undefined) result.observe(instrument, value, attributes);
          }
        }
      },
      instruments.map(({ instrument }) => instrument),
    );
  }
  live.add(recorder);
  const forget = () => live.delete(recorder);
  done.then(forget, forget);
}
