import type { CheckpointStats } from '../checkpoint/checkpointStats.js';
import type { GraphNode } from '../core/graph.js';
import type { Scheduler } from '../core/types.js';
import type { JobMetrics, OperatorMetrics } from './jobMetrics.js';

/** Least, mean and greatest of a figure over the completed checkpoints (Flink's checkpoint statistics summary). */
export interface MinAvgMax {
  readonly min: number;
  readonly avg: number;
  readonly max: number;
}

/** One operator of the live job view: where it sits in the graph and how it runs now. */
export interface JobViewOperator extends OperatorMetrics {
  /** What made it: `source`, `keyBy`, `reduce`, `window`, `sink`, … */
  readonly kind: string;
  readonly role: GraphNode['role'];
  /** The uids of the operators it reads from (the graph's edges point from them to it). */
  readonly inputs: readonly string[];
  readonly parallelism: number;
  /** With worker threads: the workers its instances run in; undefined on one thread. */
  readonly workers: readonly number[] | undefined;
  /** Records per second in and out, over the last few seconds. */
  readonly recordsInPerSecond: number;
  readonly recordsOutPerSecond: number;
  /** Sources: the share of the last few seconds spent pushing records (0 to 1). */
  readonly busyRatio: number | undefined;
  /** Sources: the share of the last few seconds spent paused by backpressure (0 to 1). */
  readonly backpressuredRatio: number | undefined;
  /** Its part in the latest completed checkpoint (the slowest instance of each time, instances' bytes summed). */
  readonly checkpoint: { readonly id: number; readonly alignmentMs: number; readonly syncMs: number; readonly asyncMs: number; readonly bytes: number } | undefined;
}

/** Something that happened to the job, at a time on its clock: the timeline's markers. */
export type JobViewEvent =
  /** An attempt failed and another one ran; `afterCheckpoint` is the newest checkpoint id triggered before it. */
  | { readonly type: 'restart'; readonly at: number; readonly restarts: number; readonly reason: string; readonly afterCheckpoint: number | undefined }
  /** A savepoint ended (completed, failed or aborted, with its reason). */
  | { readonly type: 'savepoint'; readonly at: number; readonly checkpoint: number; readonly status: CheckpointStats['status']; readonly path: string; readonly reason?: string };

/** A running job's live picture, as `running.view()` returns it and `serveQueryableState` serves it at `GET /v1/job`. */
export interface JobView {
  readonly job: string;
  /** When it was taken, on the job's clock. */
  readonly at: number;
  /** Worker threads the job runs on; undefined on one thread. */
  readonly workers: number | undefined;
  readonly restarts: number;
  /** The operators in the order they were added to the job (a topological order). */
  readonly operators: readonly JobViewOperator[];
  /** Checkpoints and savepoints that ended, by outcome. */
  readonly counts: { readonly completed: number; readonly failed: number; readonly aborted: number };
  /** The latest checkpoints and savepoints to end (at most 100), oldest first: completed, failed and aborted, with reasons. */
  readonly checkpoints: readonly CheckpointStats[];
  /** Over every completed checkpoint of the run; undefined before the first. */
  readonly summary: { readonly durationMs: MinAvgMax; readonly bytes: MinAvgMax; readonly fullSize: MinAvgMax; readonly alignmentMs: MinAvgMax } | undefined;
  /** Restarts and savepoints, oldest first. */
  readonly events: readonly JobViewEvent[];
}

/** The job's figures the view reads, each time it is taken. */
export interface JobViewSources {
  readonly graph: readonly GraphNode[];
  readonly workers: number | undefined;
  readonly scheduler: Pick<Scheduler, 'now'>;
  metrics(): JobMetrics;
  /** Every checkpoint and savepoint that ended, oldest first. */
  history(): readonly CheckpointStats[];
  restarts(): readonly Extract<JobViewEvent, { type: 'restart' }>[];
}

/** Rates are taken over the readings of the last few seconds. */
const RATE_WINDOW_MS = 5_000;
const HISTORY_ROWS = 100;

interface Reading {
  readonly at: number;
  readonly byUid: Map<string, OperatorMetrics>;
}

/**
 * Takes a running job's live view from what the job already keeps (its metrics, its checkpoint history, its
 * restarts), and turns counters into rates against the readings of the last few seconds: nothing runs between
 * views, so a job nobody watches pays nothing.
 */
export class JobViewer {
  private readings: Reading[];

  constructor(private readonly sources: JobViewSources) {
    // A first reading of zeros at the start, so that the first view already has rates (since the start).
    this.readings = [{ at: sources.scheduler.now(), byUid: new Map() }];
  }

  view(): JobView {
    const { sources } = this;
    const metrics = sources.metrics();
    const at = sources.scheduler.now();
    const reading: Reading = { at, byUid: new Map(metrics.operators.map((operator) => [operator.uid, operator])) };
    // The base is the oldest reading still inside the window (or the newest one before it, when none is).
    while (this.readings.length > 1 && this.readings[1]!.at <= at - RATE_WINDOW_MS) this.readings.shift();
    const base = this.readings[0]!;
    this.readings.push(reading);
    const seconds = Math.max(at - base.at, 1) / 1000;
    const history = sources.history();
    const completed = history.filter((stats) => stats.status === 'completed');
    const latest = completed.at(-1);
    const operators = sources.graph.map((node): JobViewOperator => {
      const now = reading.byUid.get(node.uid) ?? emptyMetrics(node.uid);
      const then = base.byUid.get(node.uid);
      const delta = (read: (operator: OperatorMetrics) => number | undefined) => ((read(now) ?? 0) - (then ? (read(then) ?? 0) : 0)) / seconds;
      const ratio = (read: (operator: OperatorMetrics) => number | undefined) => (read(now) === undefined ? undefined : Math.min(1, Math.max(0, delta(read) / 1000)));
      return {
        ...now,
        kind: node.kind ?? node.role,
        role: node.role,
        inputs: node.inputs.map((input) => input.uid),
        parallelism: node.parallelism ?? 1,
        workers: sources.workers === undefined ? undefined : workersOf(node, sources.workers),
        recordsInPerSecond: delta((operator) => operator.recordsIn),
        recordsOutPerSecond: delta((operator) => operator.recordsOut),
        busyRatio: ratio((operator) => operator.busyMs),
        backpressuredRatio: ratio((operator) => operator.backpressuredMs),
        checkpoint: latest && checkpointPart(latest, node.uid),
      };
    });
    const counts = { completed: 0, failed: 0, aborted: 0 };
    for (const stats of history) counts[stats.status]++;
    const savepoints = history
      .filter((stats) => stats.kind === 'savepoint')
      .map((stats): JobViewEvent => ({ type: 'savepoint', at: stats.timestamp + stats.durationMs, checkpoint: stats.id, status: stats.status, path: stats.path, ...(stats.reason === undefined ? {} : { reason: stats.reason }) }));
    return {
      job: metrics.job,
      at,
      workers: sources.workers,
      restarts: metrics.restarts,
      operators,
      counts,
      checkpoints: history.slice(-HISTORY_ROWS),
      summary:
        completed.length === 0
          ? undefined
          : {
              durationMs: minAvgMax(completed.map((stats) => stats.durationMs)),
              bytes: minAvgMax(completed.map((stats) => stats.bytes)),
              fullSize: minAvgMax(completed.map((stats) => stats.fullSize)),
              alignmentMs: minAvgMax(completed.map((stats) => Math.max(0, ...stats.operators.map((operator) => operator.alignmentMs)))),
            },
      events: [...sources.restarts(), ...savepoints].sort((a, b) => a.at - b.at),
    };
  }
}

function minAvgMax(values: number[]): MinAvgMax {
  return { min: Math.min(...values), avg: values.reduce((sum, value) => sum + value, 0) / values.length, max: Math.max(...values) };
}

function checkpointPart(stats: CheckpointStats, uid: string): JobViewOperator['checkpoint'] {
  const parts = stats.operators.filter((operator) => operator.uid === uid);
  if (parts.length === 0) return undefined;
  const slowest = (read: (part: (typeof parts)[number]) => number) => Math.max(...parts.map(read));
  return {
    id: stats.id,
    alignmentMs: slowest((part) => part.alignmentMs),
    syncMs: slowest((part) => part.syncMs),
    asyncMs: slowest((part) => part.asyncMs),
    bytes: parts.reduce((sum, part) => sum + part.bytes, 0),
  };
}

/**
 * Where weir places a node's instances on `workers` threads (see `startJob`): instance i of a keyed operator or of
 * a source's splits in worker i mod workers, a sink or another stateful operator in worker 0, stateless operators in
 * every worker.
 */
function workersOf(node: GraphNode, workers: number): number[] {
  const parallelism = node.parallelism ?? 1;
  if (node.keySelector !== undefined || node.source !== undefined) {
    return [...new Set(Array.from({ length: parallelism }, (_, instance) => instance % workers))].sort((a, b) => a - b);
  }
  if (node.stateful) return [0];
  return Array.from({ length: workers }, (_, worker) => worker);
}

/** An operator that has counted nothing yet (no attempt has built it). */
function emptyMetrics(uid: string): OperatorMetrics {
  return {
    uid,
    recordsIn: 0,
    recordsOut: 0,
    busyMs: undefined,
    idleMs: undefined,
    backpressuredMs: undefined,
    watermark: undefined,
    watermarkLagMs: undefined,
    sourceLag: undefined,
    stateEntries: undefined,
    stateBytes: undefined,
    alignmentMs: undefined,
  };
}
