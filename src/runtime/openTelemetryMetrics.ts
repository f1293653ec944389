import type { BatchObservableResult, Meter } from '@opentelemetry/api';
import type { JobMetricsRecorder } from './jobMetrics.js';
import { METRIC_SPECS } from './metricSpecs.js';

/**
 * The OpenTelemetry API, imported when the first job of this thread starts rather than with weir: every worker
 * thread of a job on workers (`startJob`) imports weir to build the job and never starts one of its own (the main
 * thread reports the workers' metrics), so loading the API there was about 12 ms of CPU per worker for nothing.
 */
let api: Promise<typeof import('@opentelemetry/api')> | undefined;

/** The running jobs of this process whose metrics the OpenTelemetry instruments report. */
const live = new Set<JobMetricsRecorder>();
/** Meters weir's instruments are registered on: one per MeterProvider the application installed. */
const instrumented = new WeakSet<Meter>();

/**
 * Reports `recorder`'s job through the OpenTelemetry metrics API (`metrics.getMeter('weir')`) until `done` settles:
 * observable instruments read when the application's SDK collects, so nothing runs per record and nothing at all
 * without an SDK (the API's default meter does nothing). The meter is looked up as each job starts (once the API
 * is loaded), as the API has no proxy meter: an SDK installed before a job starts sees it.
 */
export function reportToOpenTelemetry(recorder: JobMetricsRecorder, done: Promise<unknown>): void {
  live.add(recorder);
  const forget = () => live.delete(recorder);
  done.then(forget, forget);
  void (api ??= import('@opentelemetry/api')).then(({ metrics }) => instrument(metrics.getMeter('weir')));
}

/** Registers weir's instruments on `meter`, once per meter: they read every live job when the SDK collects. */
function instrument(meter: Meter): void {
  if (instrumented.has(meter)) return;
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
