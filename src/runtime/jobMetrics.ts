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
  /** The worker thread the numbers come from: `'0'`, the job's own thread, until jobs run on several. */
  readonly worker: string;
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

  snapshot(): JobMetrics {
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
}

/** A backend's entry count, undefined when it cannot tell cheaply or is gone (the attempt ended). */
function entriesOf(backend: KeyedStateBackend | undefined): number | undefined {
  try {
    return backend?.stateEntries?.();
  } catch {
    return undefined;
  }
}
