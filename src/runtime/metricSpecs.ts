import type { JobMetrics } from './jobMetrics.js';

/** A series' labels: `job`, `operator` (the uid), `worker`, and `outcome` for checkpoint counts. */
export type Labels = Record<string, string>;

const OPERATOR_LABELS = ['job', 'operator', 'worker'];
const JOB_LABELS = ['job', 'worker'];

/** What an instrument reports from a job's metrics: a value (none: not reported) and its attributes, per series. */
export type Reading = (metrics: JobMetrics) => Iterable<[number | undefined, Labels]>;
export interface MetricSpec {
  readonly name: string;
  readonly description: string;
  readonly unit: string;
  readonly kind: 'counter' | 'gauge';
  /** The label (attribute) names its series have. */
  readonly labels: readonly string[];
  readonly read: Reading;
}

const jobLabels = (job: JobMetrics): Labels => ({ job: job.job, worker: job.worker });
/** One series per operator, and per worker with worker threads (`startJob`), whose figures each worker reports. */
function perOperator(read: (operator: JobMetrics['operators'][number]) => number | undefined): Reading {
  return (job) =>
    (job.workers ?? [{ worker: job.worker, operators: job.operators }]).flatMap(({ worker, operators }) =>
      operators.map((operator): [number | undefined, Labels] => [read(operator), { job: job.job, operator: operator.uid, worker }]),
    );
}
const seconds = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000);

/**
 * Every metric weir reports, named as Prometheus names them (prometheusMetrics.ts adds `_total` to counters, as
 * OpenTelemetry's Prometheus exporter does), with `job`, `operator` (the uid) and `worker` attributes.
 */
export const METRIC_SPECS: readonly MetricSpec[] = [
  { name: 'weir_operator_records_in', description: 'Records that reached the operator', unit: '{record}', kind: 'counter', labels: OPERATOR_LABELS, read: perOperator((o) => o.recordsIn) },
  { name: 'weir_operator_records_out', description: 'Records the operator emitted', unit: '{record}', kind: 'counter', labels: OPERATOR_LABELS, read: perOperator((o) => o.recordsOut) },
  {
    name: 'weir_source_busy_seconds',
    description: "Time the thread spent pushing the source's records through the operators chained behind it",
    unit: 's',
    kind: 'counter',
    labels: OPERATOR_LABELS,
    read: perOperator((o) => seconds(o.busyMs)),
  },
  { name: 'weir_source_idle_seconds', description: 'Time the source waited for input', unit: 's', kind: 'counter', labels: OPERATOR_LABELS, read: perOperator((o) => seconds(o.idleMs)) },
  {
    name: 'weir_source_backpressured_seconds',
    description: 'Time the source was paused because an operator could not take more records',
    unit: 's',
    kind: 'counter',
    labels: OPERATOR_LABELS,
    read: perOperator((o) => seconds(o.backpressuredMs)),
  },
  { name: 'weir_source_lag_records', description: 'Records the source has not read yet, where it knows', unit: '{record}', kind: 'gauge', labels: OPERATOR_LABELS, read: perOperator((o) => o.sourceLag) },
  { name: 'weir_operator_watermark_milliseconds', description: "The operator's current event-time watermark", unit: 'ms', kind: 'gauge', labels: OPERATOR_LABELS, read: perOperator((o) => o.watermark) },
  {
    name: 'weir_operator_watermark_lag_seconds',
    description: "How far the operator's watermark is behind the job's clock",
    unit: 's',
    kind: 'gauge',
    labels: OPERATOR_LABELS,
    read: perOperator((o) => seconds(o.watermarkLagMs)),
  },
  { name: 'weir_operator_state_entries', description: 'Entries in the operator\'s keyed working state', unit: '{entry}', kind: 'gauge', labels: OPERATOR_LABELS, read: perOperator((o) => o.stateEntries) },
  {
    name: 'weir_operator_state_checkpointed_bytes',
    description: 'Bytes the operator persisted in the latest completed checkpoint',
    unit: 'By',
    kind: 'gauge',
    labels: OPERATOR_LABELS,
    read: perOperator((o) => o.stateBytes),
  },
  {
    name: 'weir_operator_checkpoint_alignment_seconds',
    description: "The operator's barrier alignment in the latest completed checkpoint",
    unit: 's',
    kind: 'gauge',
    labels: OPERATOR_LABELS,
    read: perOperator((o) => seconds(o.alignmentMs)),
  },
  { name: 'weir_job_restarts', description: 'Restarts of the job', unit: '{restart}', kind: 'counter', labels: JOB_LABELS, read: (job) => [[job.restarts, jobLabels(job)]] },
  {
    name: 'weir_checkpoints',
    description: 'Checkpoints and savepoints that ended, by outcome (completed, failed, aborted)',
    unit: '{checkpoint}',
    kind: 'counter',
    labels: [...JOB_LABELS, 'outcome'],
    read: (job) =>
      (['completed', 'failed', 'aborted'] as const).map((outcome) => [job.checkpoints[outcome], { ...jobLabels(job), outcome }]),
  },
  { name: 'weir_checkpoint_duration_seconds', description: 'Duration of the latest completed checkpoint', unit: 's', kind: 'gauge', labels: JOB_LABELS, read: latest((c) => c.durationMs / 1000) },
  { name: 'weir_checkpoint_size_bytes', description: 'Bytes the latest completed checkpoint persisted', unit: 'By', kind: 'gauge', labels: JOB_LABELS, read: latest((c) => c.bytes) },
  {
    name: 'weir_checkpoint_full_size_bytes',
    description: 'Size of the whole state the latest completed checkpoint restores',
    unit: 'By',
    kind: 'gauge',
    labels: JOB_LABELS,
    read: latest((c) => c.fullSize),
  },
  {
    name: 'weir_checkpoint_alignment_seconds',
    description: 'The slowest barrier alignment of the latest completed checkpoint',
    unit: 's',
    kind: 'gauge',
    labels: JOB_LABELS,
    read: latest((c) => Math.max(0, ...c.operators.map((o) => o.alignmentMs)) / 1000),
  },
];

function latest(read: (checkpoint: NonNullable<JobMetrics['checkpoints']['latest']>) => number): Reading {
  return (job) => [[job.checkpoints.latest === undefined ? undefined : read(job.checkpoints.latest), jobLabels(job)]];
}

