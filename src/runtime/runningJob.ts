import { EMPTY, type Observable } from 'rxjs';
import type { CheckpointCoordinator, SavepointTarget } from '../checkpoint/coordinator.js';
import type { CheckpointStats } from '../checkpoint/checkpointStats.js';
import type { LoadedCheckpoint } from '../checkpoint/loadCheckpoint.js';
import { checkOptions } from '../core/checkOptions.js';
import { JobDefinitionError, WeirError } from '../core/errors.js';
import { UnknownQueryableStateError } from '../query/queryErrors.js';
import type { Attempt } from './attempt.js';
import { StateQueries, type KeyPage, type KeyPageOptions, type QueryableStateReader, type QueryOptions } from '../query/stateQueries.js';
import type { QueryableStateInfo } from '../query/queryableStateRegistry.js';
import type { RestartStrategy } from './restartStrategy.js';
import type { CheckpointLock, CheckpointStorage, Key, Scheduler } from '../core/types.js';
import { JobEvents, type JobLogger } from './jobEvents.js';
import { JobMetricsRecorder, type JobMetrics } from './jobMetrics.js';
import { reportToOpenTelemetry } from './openTelemetryMetrics.js';
import { JobViewer, type JobView, type JobViewEvent } from './jobView.js';
import type { GraphNode } from '../core/graph.js';
import { describeRestore, type JobResult, type RestoredFrom } from './jobResult.js';

export type { JobResult, RestoredFrom } from './jobResult.js';

const SAVEPOINT_OPTIONS = ['path', 'storage'];

/** Where a savepoint goes. */
export interface SavepointOptions {
  /** A directory of the storage (default `savepoints`); the savepoint is a new `savepoint-<job>-<id>-<random>` directory in it. */
  path?: string;
  /** The storage to write it to; the job's checkpoint storage by default. */
  storage?: CheckpointStorage;
}

export interface RunSetup {
  job: string;
  /** The job's operators, for its live view. */
  graph: readonly GraphNode[];
  /** Worker threads its attempts run on (`startJob`); undefined on one thread. */
  workers?: number;
  scheduler: Scheduler;
  interval: number | undefined;
  retainOnCancel: boolean;
  coordinator: CheckpointCoordinator | undefined;
  /** Where the coordinator persists checkpoints; `asOf` queries read them there. */
  storage: CheckpointStorage | undefined;
  /** Takes the storage's lock on the job's directory for the whole run (storages with `lock` only). */
  lock?: () => Promise<CheckpointLock>;
  restartStrategy: RestartStrategy;
  /** Where the job's events are logged (none by default). */
  logger?: JobLogger;
  /** A new attempt restored from `restored` (`restoringAtStart` when restoring a persisted checkpoint at job start). */
  attempt(restored: LoadedCheckpoint | undefined, restoringAtStart: boolean, metrics: JobMetricsRecorder): Attempt;
  /** Why this run answers no state queries (its attempts run on worker threads); undefined when it answers them. */
  queriesRefused?: string;
  /** Finds the checkpoint to start from (and prepares the coordinator); undefined for a fresh start. */
  restoreAtStart(): Promise<LoadedCheckpoint | undefined>;
  /** The checkpoint to restart from after a failure, given the checkpoint the run started from. */
  restoreAfterFailure(startedFrom: LoadedCheckpoint | undefined): Promise<LoadedCheckpoint | undefined>;
}

/**
 * A started job: runs attempts until the input ends, restarting from the latest completed checkpoint after a
 * failure as the restart strategy allows, and triggers periodic checkpoints meanwhile.
 */
export class RunningJob implements QueryableStateReader {
  /** Resolves when the job has finished (its output committed); rejects with the error that made it fail. */
  readonly done: Promise<JobResult>;
  private execution: Attempt | undefined;
  private status = 'finished' as JobResult['status'];
  private restartCount = 0;
  /** What the start restored, and what the latest attempt restored. */
  private startedFrom: RestoredFrom | undefined;
  private attemptFrom: RestoredFrom | undefined;
  private ended = false;
  private cancelRestartDelay: (() => void) | undefined;
  private stopSavepoint: SavepointTarget | undefined;
  private readonly queries: StateQueries;
  /**
   * Settles once the first attempt runs (or the job ended before): a checkpoint asked for right after `start()` waits
   * for it. From then on checkpoints are triggered synchronously, so a barrier goes in exactly where it is asked for.
   */
  private readonly started: Promise<void>;
  private hasStarted = false;
  private markStarted!: () => void;
  private readonly events: JobEvents;
  private readonly recorder: JobMetricsRecorder;
  private readonly restartLog: Extract<JobViewEvent, { type: 'restart' }>[] = [];
  private readonly viewer: JobViewer;

  constructor(private readonly setup: RunSetup) {
    this.queries = new StateQueries(setup.job, setup.storage);
    this.started = new Promise<void>((resolve) => (this.markStarted = () => ((this.hasStarted = true), resolve())));
    this.events = new JobEvents(setup.job, setup.logger, this.checkpoints$);
    this.recorder = new JobMetricsRecorder(setup.job, setup.scheduler, () => this.restartCount, this.checkpoints$);
    this.viewer = new JobViewer({
      graph: setup.graph,
      workers: setup.workers,
      scheduler: setup.scheduler,
      metrics: () => this.recorder.snapshot(),
      history: () => this.checkpointHistory,
      restarts: () => this.restartLog,
    });
    this.done = this.run();
    reportToOpenTelemetry(this.recorder, this.done);
    this.done.then((result) => this.events.emit({ type: 'job:stop', job: setup.job, result }), (error: unknown) => this.events.emit({ type: 'job:stop', job: setup.job, error }));
  }

  /**
   * The job's metrics now, read from counters the engine keeps: records in and out per operator, sources' busy, idle
   * and backpressured time and lag, watermarks and their lag, state entries and bytes, checkpoint outcomes and the
   * latest one's duration, size and alignment, restarts. `registerPrometheusMetrics` and OpenTelemetry read the same.
   * @example
   * const { operators, checkpoints } = running.metrics;
   * for (const o of operators) console.log(o.uid, o.recordsIn, o.recordsOut, o.watermarkLagMs);
   */
  get metrics(): JobMetrics {
    return this.recorder.snapshot();
  }

  /**
   * The job's live picture: its graph with each operator's counts, rates, backpressure, watermark and part in the
   * latest checkpoint; the checkpoint history with failed and aborted ones and their reasons; min/avg/max of
   * checkpoint duration, size and alignment; restarts and savepoints with their times. `serveQueryableState` serves it
   * at `GET /v1/job` and, with `liveView: true`, draws it at `/job`. Rates are over the views of the last 5 s.
   * @example
   * const { operators, checkpoints, events } = running.view();
   * for (const o of operators) console.log(o.uid, o.recordsInPerSecond, o.backpressuredRatio, o.watermark);
   */
  view(): JobView {
    return this.viewer.view();
  }

  /**
   * The current value of a queryable state for a key (a copy; an aggregating state's result), or `undefined` when
   * the key holds none. Waits while the job starts or restarts. `asOf` reads a completed, retained checkpoint.
   * A state is queryable from the start when its operator lists it in `states`, else once the operator first uses it.
   * @example
   * const count = valueState<number>('count', { queryable: 'clicks-per-user' });
   * clicks.pipe(keyBy((c) => c.user), process(countClicks, { uid: 'count', states: [count] }));
   * await running.query<number>('clicks-per-user', 'ada');                 // live
   * await running.query<number>('clicks-per-user', 'ada', { asOf: 3 });    // as of checkpoint 3
   */
  query<T = unknown>(name: string, key: Key, options?: QueryOptions): Promise<T | undefined> {
    const attempt = this.execution;
    if (attempt?.query && this.hasStarted && !this.ended) {
      return attempt.query(name, key, options?.asOf).then(({ known, value }) => {
        if (!known) throw this.unknownOnWorkers(name);
        return value as T | undefined;
      });
    }
    if (this.setup.queriesRefused) return Promise.reject(new JobDefinitionError(this.setup.queriesRefused));
    return this.queries.query<T>(name, key, options);
  }

  /**
   * A page of the keys of a queryable state, in key order, filtered by prefix and range; pass `cursor` back for
   * the next page. The scan yields to processing as it goes, so a large state never stalls the job.
   * @example
   * let page = await running.queryKeys('clicks-per-user', { prefix: 'user-', limit: 500 });
   * while (page.cursor) page = await running.queryKeys('clicks-per-user', { prefix: 'user-', limit: 500, cursor: page.cursor });
   */
  queryKeys(name: string, options?: KeyPageOptions): Promise<KeyPage> {
    const attempt = this.execution;
    if (attempt?.queryKeys && this.hasStarted && !this.ended) {
      return attempt.queryKeys(name, options ?? {}).then(({ known, page }) => {
        if (!known) throw this.unknownOnWorkers(name);
        return page;
      });
    }
    if (this.setup.queriesRefused) return Promise.reject(new JobDefinitionError(this.setup.queriesRefused));
    return this.queries.queryKeys(name, options);
  }

  private unknownOnWorkers(name: string): UnknownQueryableStateError {
    return new UnknownQueryableStateError(
      `job '${this.setup.job}' has no queryable state '${name}' on its workers (yet: a state is queryable once its operator used it, or from the start when listed in its states)`,
    );
  }

  /**
   * The queryable states registered so far: those listed in their operator's `states` from the start, the others
   * once their operator first uses them.
   */
  queryableStates(): QueryableStateInfo[] {
    return this.execution?.queryableStates?.() ?? this.queries.queryableStates();
  }

  /**
   * The checkpoint or savepoint the running attempt restored: the one the start restored (`undefined` for a fresh
   * start), and after a restart the checkpoint that restart restored (`undefined` when it started over). Known once
   * the attempt has read it, before its first record: after `await running.checkpoint()`, in a function the
   * attempt calls, or when `done` settles. `JobResult.restoredFrom` is the path the start restored.
   * @example
   * const running = job.start({ restore: 'latest' });
   * await running.done;
   * console.log(running.restoredFrom ? `restored from checkpoint ${running.restoredFrom.id}` : 'started fresh');
   */
  get restoredFrom(): RestoredFrom | undefined {
    return this.attemptFrom;
  }

  /** Restarts so far. */
  get restarts(): number {
    return this.restartCount;
  }

  /** Checkpoints (and savepoints) completed by this run, oldest first: each one can be restored from its `path`. */
  get checkpoints(): readonly CheckpointStats[] {
    return this.setup.coordinator?.history ?? [];
  }

  /**
   * Every checkpoint and savepoint of this run in the order they ended: completed, and also failed or aborted ones
   * (timed out, subsumed by a newer one, cancelled), with `status`, `reason` (the message) and `error` (the error's
   * class name). `checkpoints$` emits the same entries live.
   * @example running.checkpointHistory.filter((c) => c.status !== 'completed').map((c) => `${c.id}: ${c.reason}`)
   */
  get checkpointHistory(): readonly CheckpointStats[] {
    return this.setup.coordinator?.outcomes ?? [];
  }

  /**
   * Every checkpoint of this run as it ends: completed, failed or aborted, with per-operator alignment, sync and
   * async durations and sizes.
   * @example running.checkpoints$.subscribe((c) => console.log(c.id, c.status, c.durationMs, c.bytes));
   */
  get checkpoints$(): Observable<CheckpointStats> {
    return this.setup.coordinator?.stats$ ?? EMPTY;
  }

  /**
   * Takes a checkpoint now; resolves with its stats once it is complete and the sinks committed. Once the input has
   * ended (a job restored at the end of its input ends at once), it resolves with the final checkpoint (`final: true`).
   * @example const { id, durationMs, bytes, path } = await running.checkpoint();
   */
  checkpoint(): Promise<CheckpointStats> {
    const { coordinator, job } = this.setup;
    if (!coordinator) {
      return Promise.reject(new JobDefinitionError(`job '${job}' has checkpointing off; pass checkpoints: { storage, interval } to createJob`));
    }
    return this.hasStarted ? coordinator.trigger() : this.started.then(() => coordinator.trigger());
  }

  /**
   * Takes a savepoint now: a full, self-contained snapshot in `path` (a directory of the checkpoint storage, or of
   * `storage`), which the job never deletes. Restore it with `start({ restore: { savepoint: stats.path } })`.
   * @example const { path } = await running.savepoint({ path: 'savepoints' });
   */
  savepoint(options: SavepointOptions = {}): Promise<CheckpointStats> {
    const { coordinator, job } = this.setup;
    try {
      checkOptions(`job '${job}': savepoint`, options, SAVEPOINT_OPTIONS);
    } catch (error) {
      return Promise.reject(error);
    }
    const target = this.savepointTarget(options);
    if (!coordinator || !target) {
      return Promise.reject(new JobDefinitionError(`job '${job}' has checkpointing off; pass checkpoints: { storage } to createJob to take savepoints`));
    }
    return this.hasStarted ? coordinator.trigger(false, target) : this.started.then(() => coordinator.trigger(false, target));
  }

  /**
   * Stops reading the sources, drains in-flight records, takes a final checkpoint (a savepoint with
   * `{ savepoint: { path } }`, Flink's stop-with-savepoint), commits sinks, and ends. Pending windows do not fire:
   * their state is in the savepoint.
   */
  stop(options: { savepoint?: SavepointOptions } = {}): Promise<JobResult> {
    try {
      checkOptions(`job '${this.setup.job}': stop`, options, ['savepoint']);
      checkOptions(`job '${this.setup.job}': stop savepoint`, options.savepoint, SAVEPOINT_OPTIONS);
    } catch (error) {
      return Promise.reject(error);
    }
    if (!this.ended) {
      this.status = 'stopped';
      this.stopSavepoint = options.savepoint ? this.savepointTarget(options.savepoint) : undefined;
      this.execution?.drain(this.stopSavepoint);
    }
    return this.done;
  }

  private savepointTarget(options: SavepointOptions): SavepointTarget | undefined {
    const storage = options.storage ?? this.setup.storage;
    return storage ? { storage, dir: options.path ?? 'savepoints' } : undefined;
  }

  /** Ends the job at once; output not yet committed is discarded, completed checkpoints stay. */
  cancel(): Promise<JobResult> {
    const cancelling = !this.ended;
    if (cancelling) {
      this.status = 'cancelled';
      // The attempt's `done` (awaited by `run`) settles once everything it ran is gone.
      void this.execution?.cancel(new WeirError(`job '${this.setup.job}' was cancelled`));
      this.cancelRestartDelay?.();
    }
    return this.done
      .catch(() => this.result())
      .then(async (result) => {
        const { coordinator, retainOnCancel } = this.setup;
        if (cancelling && coordinator && !retainOnCancel) {
          await coordinator.settled();
          await coordinator.deleteAll();
        }
        return result;
      });
  }

  private cancelled(): boolean {
    return this.status === 'cancelled';
  }

  private result(): JobResult {
    return {
      status: this.status,
      restarts: this.restartCount,
      checkpoints: this.checkpoints,
      checkpointHistory: this.checkpointHistory,
      restoredFrom: this.startedFrom?.path,
    };
  }

  private async run(): Promise<JobResult> {
    const { setup } = this;
    const stopTimer = this.startCheckpointTimer();
    let lock: CheckpointLock | undefined;
    this.events.emit({ type: 'job:start', job: setup.job });
    try {
      // Before anything is read: a second run on the same directory would delete the first one's checkpoints.
      lock = await setup.lock?.();
      const startedFrom = await setup.restoreAtStart();
      this.startedFrom = this.attemptFrom = describeRestore(startedFrom);
      if (this.startedFrom) this.events.emit({ type: 'restore', job: setup.job, restoredFrom: this.startedFrom, restart: false });
      let restored = startedFrom;
      for (;;) {
        const execution = setup.attempt(restored, restored === startedFrom && this.restartCount === 0, this.recorder);
        this.execution = execution;
        try {
          if (this.cancelled()) return this.result();
          await execution.start();
          this.markStarted();
          this.queries.attach(execution.queryable);
          if (this.status === 'stopped') execution.drain(this.stopSavepoint);
          await execution.done;
          return this.result();
        } catch (error) {
          this.queries.detach();
          // Everything the attempt ran is gone (its worker threads terminated) before the next one starts.
          await execution.cancel(error);
          if (this.cancelled()) return this.result();
          // A definition error would fail every attempt alike: the job fails at once, as Flink's SuppressRestartsException.
          const delay = error instanceof JobDefinitionError ? undefined : setup.restartStrategy(this.restartCount + 1);
          if (delay === undefined) throw error;
          this.restartCount++;
          this.restartLog.push({
            type: 'restart',
            at: setup.scheduler.now(),
            restarts: this.restartCount,
            reason: error instanceof Error ? error.message : String(error),
            afterCheckpoint: this.checkpointHistory.at(-1)?.id,
          });
          this.events.emit({ type: 'restart', job: setup.job, restarts: this.restartCount, delayMs: delay, cause: error });
          await this.sleep(delay);
          if (this.cancelled()) return this.result();
          await setup.coordinator?.settled();
          restored = await setup.restoreAfterFailure(startedFrom);
          this.attemptFrom = describeRestore(restored);
          if (this.attemptFrom) this.events.emit({ type: 'restore', job: setup.job, restoredFrom: this.attemptFrom, restart: true });
        }
      }
    } finally {
      this.markStarted();
      this.queries.end();
      this.ended = true;
      stopTimer();
      // Subsumed checkpoints are removed in the background: done before the directory is given up.
      await setup.coordinator?.settled();
      // Released before `done` settles, so that a job started right after this one ended finds the directory free.
      await lock?.release().catch(() => undefined);
    }
  }

  private startCheckpointTimer(): () => void {
    const { interval, coordinator, scheduler } = this.setup;
    if (!coordinator || interval === undefined) return () => undefined;
    const action = scheduler.schedule(function tick(this: { schedule(state?: unknown, delay?: number): unknown }) {
      // Periodic checkpoints skip a beat while one is still in flight (maxConcurrent = 1).
      if (coordinator.mayTriggerPeriodic()) coordinator.trigger().catch(() => undefined);
      this.schedule(undefined, interval);
    }, interval);
    return () => action.unsubscribe();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const action = this.setup.scheduler.schedule(() => resolve(), ms);
      this.cancelRestartDelay = () => {
        action.unsubscribe();
        resolve();
      };
    });
  }
}
