import type { Observable } from 'rxjs';
import type { CheckpointStats } from '../checkpoint/checkpointStats.js';
import type { OperatorWatermark } from '../core/elements.js';
import { OperatorCounters } from '../core/operatorCounters.js';
import type { KeyedStateBackend, Scheduler } from '../core/types.js';

/** One operator's metrics (its parallel instances summed), as `running.metrics` reports them. */
export interface OperatorMetrics {
  /** The operator's uid. */
  readonly uid: string;
  /** Records that reached it since the job started (restarts included: replayed records count again). */
  readonly recordsIn: number;
  /** Records it emitted since the job started. */
  readonly recordsOut: number;
  /**
   * Sources: ms the thread spent pushing this source's chunks through the operators chained behind it (weir runs a
   * job's operators on one thread, so time is measured per source, between chunks, never per record).
   */
  readonly busyMs: number | undefined;
  /** Sources: ms spent waiting for input. */
  readonly idleMs: number | undefined;
  /** Sources: ms spent paused because an operator could not take more records. */
  readonly backpressuredMs: number | undefined;
  /** Its current event-time watermark; undefined before its first one. */
  readonly watermark: number | undefined;
  /** How far the watermark is behind the job's clock, in ms; undefined without a watermark. */
  readonly watermarkLagMs: number | undefined;
  /** Sources that know it (in-memory arrays): records not read yet. */
  readonly sourceLag: number | undefined;
  /** Keyed operators: entries in working state, as the backend counts them cheaply (see `stateEntries`). */
  readonly stateEntries: number | undefined;
  /** Bytes the operator persisted in the latest completed checkpoint (incremental: that checkpoint's delta). */
  readonly stateBytes: number | undefined;
  /** Its barrier alignment in the latest completed checkpoint (the slowest instance), in ms. */
  readonly alignmentMs: number | undefined;
}

/** A running job's metrics at one moment: `running.metrics`. */
export interface JobMetrics {
  readonly job: string;
  /** The thread the job's own numbers (restarts, checkpoints) come from: `'0'`, the job's main thread. */
  readonly worker: string;
  /**
   * With worker threads (`startJob`): each worker's operators, its instances summed (`operators` sums the workers).
   * Counters keep what the worker counted in earlier attempts; they are as of the worker's latest report (each second).
   */
  readonly workers?: readonly { readonly worker: string; readonly operators: readonly OperatorMetrics[] }[];
  readonly restarts: number;
  /** Checkpoints and savepoints that ended, by outcome, and the latest completed one. */
  readonly checkpoints: { readonly completed: number; readonly failed: number; readonly aborted: number; readonly latest: CheckpointStats | undefined };
  /** In the order the operators were added to the job. */
  readonly operators: readonly OperatorMetrics[];
}

/** One operator instance's counters and where to read the rest of its metrics. */
interface Instance {
  readonly uid: string;
  readonly counters: OperatorCounters;
  watermark: OperatorWatermark;
  /** Each context the attempt made for the instance may open its backend: whichever did holds the state. */
  backends: (() => KeyedStateBackend | undefined)[];
}

/**
 * Keeps the counters of a running job's operator instances across its attempts (a restart links the new attempt's
 * tasks to the same counters, so counts only grow, as monitoring systems expect of counters) and turns them into
 * `JobMetrics` when someone reads them. Nothing here runs per record: reading is the only work.
 */
export class JobMetricsRecorder {
  private readonly instances = new Map<string, Instance>();
  /** Worker threads' reports (`startJob`), by worker: the latest, and the counts of the worker's earlier attempts. */
  private readonly workerReports = new Map<number, WorkerReport>();
  private workerCount = 0;
  private readonly outcomes = { completed: 0, failed: 0, aborted: 0 };
  private latest: CheckpointStats | undefined;

  constructor(
    private readonly job: string,
    private readonly scheduler: Scheduler,
    private readonly restarts: () => number,
    checkpoints: Observable<CheckpointStats>,
  ) {
    checkpoints.subscribe((stats) => {
      this.outcomes[stats.status]++;
      if (stats.status === 'completed') this.latest = stats;
    });
  }

  /** The counters of instance `subtask` of `uid` for a new attempt, whose watermark and keyed backend are given. */
  task(uid: string, subtask: number, watermark: OperatorWatermark, backend: () => KeyedStateBackend | undefined): OperatorCounters {
    const id = `${uid}\u0000${subtask}`;
    let instance = this.instances.get(id);
    if (instance === undefined) this.instances.set(id, (instance = { uid, counters: new OperatorCounters(), watermark, backends: [] }));
    // Every attempt has watermark slots of its own: a new slot is a new attempt, whose backends replace the old.
    if (instance.watermark !== watermark) instance.backends = [];
    instance.watermark = watermark;
    instance.backends.push(backend);
    return instance.counters;
  }

  /**
   * Worker `worker` (of `workers`) reports its counters in `attempt`. A new attempt's counters start at 0: what the
   * worker counted before is carried, so that counters only grow across restarts here as on one thread.
   */
  reportWorker(attempt: number, worker: number, workers: number, operators: readonly OperatorMetrics[]): void {
    this.workerCount = workers;
    const report = this.workerReports.get(worker);
    if (report === undefined) {
      this.workerReports.set(worker, { attempt, operators, carried: new Map() });
      return;
    }
    if (report.attempt !== attempt) {
      for (const operator of report.operators) {
        const carried = report.carried.get(operator.uid) ?? {};
        for (const name of COUNTERS) if (operator[name] !== undefined) carried[name] = (carried[name] ?? 0) + operator[name];
        report.carried.set(operator.uid, carried);
      }
      report.attempt = attempt;
    }
    report.operators = operators;
  }

  snapshot(): JobMetrics {
    if (this.workerReports.size > 0) return this.workersSnapshot();
    const now = this.scheduler.now();
    const byUid = new Map<string, Instance[]>();
    for (const instance of this.instances.values()) {
      const list = byUid.get(instance.uid);
      if (list === undefined) byUid.set(instance.uid, [instance]);
      else list.push(instance);
    }
    const checkpointed = this.latest?.operators ?? [];
    const operators = [...byUid].map(([uid, instances]): OperatorMetrics => {
      const sum = (read: (counters: OperatorCounters) => number) => instances.reduce((total, { counters }) => total + read(counters), 0);
      const source = instances.some(({ counters }) => counters.source);
      const watermark = instances[0]!.watermark.current;
      const lags = instances.map(({ counters }) => counters.lag?.()).filter((lag) => lag !== undefined);
      const entries = instances.map(({ backends }) => entriesOf(backends.map((backend) => backend()).find((backend) => backend !== undefined))).filter((count) => count !== undefined);
      const saved = checkpointed.filter((operator) => operator.uid === uid);
      return {
        uid,
        recordsIn: sum((counters) => counters.recordsIn),
        recordsOut: sum((counters) => counters.recordsOut),
        busyMs: source ? sum((counters) => counters.busyMs) : undefined,
        idleMs: source ? sum((counters) => counters.idleMs) : undefined,
        backpressuredMs: source ? sum((counters) => counters.backpressuredMs) : undefined,
        watermark: Number.isFinite(watermark) ? watermark : undefined,
        watermarkLagMs: Number.isFinite(watermark) ? Math.max(0, now - watermark) : undefined,
        sourceLag: lags.length > 0 ? lags.reduce((total, lag) => total + lag, 0) : undefined,
        stateEntries: entries.length > 0 ? entries.reduce((total, count) => total + count, 0) : undefined,
        stateBytes: saved.length > 0 ? saved.reduce((total, operator) => total + operator.bytes, 0) : undefined,
        alignmentMs: saved.length > 0 ? Math.max(...saved.map((operator) => operator.alignmentMs)) : undefined,
      };
    });
    return { job: this.job, worker: '0', restarts: this.restarts(), checkpoints: { ...this.outcomes, latest: this.latest }, operators };
  }

  /** The metrics of a job on worker threads: each worker's reports, and their sums per operator. */
  private workersSnapshot(): JobMetrics {
    const now = this.scheduler.now();
    const checkpointed = this.latest?.operators ?? [];
    // Instance i of a stateful operator runs in worker i mod workers (see startJob), where its checkpoint part comes from.
    const saved = (uid: string, worker: number | undefined) =>
      checkpointed.filter((operator) => operator.uid === uid && (worker === undefined || operator.subtask % this.workerCount === worker));
    const withCheckpoint = (operator: OperatorMetrics, worker: number | undefined): OperatorMetrics => {
      const parts = saved(operator.uid, worker);
      const watermark = operator.watermark;
      return {
        ...operator,
        watermarkLagMs: watermark === undefined ? undefined : Math.max(0, now - watermark),
        stateBytes: parts.length > 0 ? parts.reduce((total, part) => total + part.bytes, 0) : undefined,
        alignmentMs: parts.length > 0 ? Math.max(...parts.map((part) => part.alignmentMs)) : undefined,
      };
    };
    const workers = [...this.workerReports]
      .sort(([a], [b]) => a - b)
      .map(([worker, report]) => ({
        worker: String(worker),
        operators: report.operators.map((operator) => {
          const carried = report.carried.get(operator.uid) ?? {};
          const counted = Object.fromEntries(COUNTERS.map((name) => [name, operator[name] === undefined && carried[name] === undefined ? undefined : (operator[name] ?? 0) + (carried[name] ?? 0)]));
          return withCheckpoint({ ...operator, ...counted }, worker);
        }),
      }));
    const uids = workers[0]!.operators.map((operator) => operator.uid);
    const operators = uids.map((uid) => {
      const instances = workers.map(({ operators }) => operators.find((operator) => operator.uid === uid)).filter((operator) => operator !== undefined);
      const total = (read: (operator: OperatorMetrics) => number | undefined) => {
        const values = instances.map(read).filter((value) => value !== undefined);
        return values.length > 0 ? values.reduce((sum, value) => sum + value, 0) : undefined;
      };
      const watermarks = instances.map((operator) => operator.watermark).filter((watermark) => watermark !== undefined);
      // An operator's watermark is the least of its instances' (the event time all of them have passed).
      const watermark = watermarks.length > 0 ? Math.min(...watermarks) : undefined;
      return withCheckpoint(
        {
          uid,
          recordsIn: total((operator) => operator.recordsIn) ?? 0,
          recordsOut: total((operator) => operator.recordsOut) ?? 0,
          busyMs: total((operator) => operator.busyMs),
          idleMs: total((operator) => operator.idleMs),
          backpressuredMs: total((operator) => operator.backpressuredMs),
          watermark,
          watermarkLagMs: undefined,
          sourceLag: total((operator) => operator.sourceLag),
          stateEntries: total((operator) => operator.stateEntries),
          stateBytes: undefined,
          alignmentMs: undefined,
        },
        undefined,
      );
    });
    return { job: this.job, worker: '0', restarts: this.restarts(), checkpoints: { ...this.outcomes, latest: this.latest }, operators, workers };
  }
}

/** The counters of `OperatorMetrics`: they add up across a worker's attempts. */
const COUNTERS = ['recordsIn', 'recordsOut', 'busyMs', 'idleMs', 'backpressuredMs'] as const;

/** A worker's latest report, and the counts its earlier attempts reached. */
interface WorkerReport {
  attempt: number;
  operators: readonly OperatorMetrics[];
  carried: Map<string, Partial<Record<(typeof COUNTERS)[number], number>>>;
}

/** A backend's entry count, undefined when it cannot tell cheaply or is gone (the attempt ended). */
function entriesOf(backend: KeyedStateBackend | undefined): number | undefined {
  try {
    return backend?.stateEntries?.();
  } catch {
    return undefined;
  }
}
