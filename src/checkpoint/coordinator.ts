import type { Observable } from 'rxjs';
import { CheckpointBarrier } from '../core/elements.js';
import { CheckpointAbortedError } from '../core/errors.js';
import type { OperatorCheckpointStats } from '../core/operatorCheckpointStats.js';
import type { CheckpointStorage, Scheduler } from '../core/types.js';
import { METADATA_FILE, checkpointDir, savepointDir } from '../storage/layout.js';
import { encodeFile } from '../storage/fileFormat.js';
import type { CheckpointAcknowledger, SnapshotTask, TaskStateHandles } from '../task/snapshotWriter.js';
import { CheckpointFailureManager } from './checkpointFailureManager.js';
import { taskId, type CheckpointParticipants } from './checkpointParticipants.js';
import type { CheckpointStats } from './checkpointStats.js';
import { CheckpointStatsTracker } from './checkpointStatsTracker.js';
import { CompletedCheckpointStore } from './completedCheckpointStore.js';
import { IncrementalChain } from './incrementalChain.js';
import { PendingCheckpoint } from './pendingCheckpoint.js';

export { taskId, type CheckpointParticipants, type CheckpointTask } from './checkpointParticipants.js';

export interface CoordinatorOptions {
  job: string;
  storage: CheckpointStorage;
  /** The job's clock: every timestamp, timeout and duration of checkpoints is on its `now()`. */
  scheduler: Scheduler;
  maxParallelism: number;
  /** How many completed checkpoints to keep (Flink's `state.checkpoints.num-retained`). */
  retain: number;
  /** A checkpoint not complete after this many ms is aborted. */
  timeout: number;
  /** Least time between the end of one checkpoint and the start of the next periodic one. */
  minPause: number;
  /** Checkpoints in flight at once. */
  maxConcurrent: number;
  /** Consecutive failed checkpoints tolerated before the job fails. */
  tolerableFailures: number;
  /**
   * Incremental checkpoints: persist only the keyed state changed since the previous checkpoint, referencing the
   * earlier files for the rest; every `fullEvery`-th checkpoint of a chain is full again.
   */
  incremental?: { fullEvery: number };
  /** Where warnings go (a failure history file that cannot be read or written). */
  warn?: (message: string) => void;
}

/** Where a savepoint goes: a directory in a storage (the job's checkpoint storage unless given). */
export interface SavepointTarget {
  storage: CheckpointStorage;
  dir: string;
}

/**
 * Flink's CheckpointCoordinator for one job, across its attempts: triggers checkpoints (at most `maxConcurrent` in
 * flight, `minPause` apart), collects the tasks' acknowledgements, writes `_metadata` last (only then is a
 * checkpoint complete), tells sinks to commit, and aborts checkpoints that time out. Retention is the completed
 * checkpoint store's, tolerance the failure manager's, delta bases the incremental chain's, stats the tracker's.
 */
export class CheckpointCoordinator implements CheckpointAcknowledger {
  private nextId = 1;
  private readonly pending = new Map<number, PendingCheckpoint>();
  private participants: CheckpointParticipants | undefined;
  /** A metadata write still in flight after its checkpoint was aborted; a restore waits for it. */
  private settling: Promise<void> = Promise.resolve();
  private finalTriggered = false;
  /** The attempt's final checkpoint (not a stop-with-savepoint), once triggered: it answers later requests. */
  private finalCheckpoint: Promise<CheckpointStats> | undefined;
  private lastEndedAt = Number.NEGATIVE_INFINITY;
  private readonly store: CompletedCheckpointStore;
  private readonly chain: IncrementalChain;
  private readonly failures: CheckpointFailureManager;
  private readonly tracker: CheckpointStatsTracker;

  constructor(private readonly options: CoordinatorOptions) {
    const { job, storage, retain, tolerableFailures, warn, scheduler } = options;
    this.store = new CompletedCheckpointStore({ storage, job, retain });
    this.chain = new IncrementalChain(options.incremental?.fullEvery);
    this.failures = new CheckpointFailureManager({ job, storage, tolerableFailures, warn });
    this.tracker = new CheckpointStatsTracker(scheduler);
  }

  /** Every checkpoint completed by this run of the job, oldest first (deleted ones included). */
  get history(): readonly CheckpointStats[] {
    return this.tracker.completed;
  }

  /** Every checkpoint of this run as it ended, oldest first: completed, failed or aborted (with its reason). */
  get outcomes(): readonly CheckpointStats[] {
    return this.tracker.ended;
  }

  /** Every checkpoint as it ends: completed, failed or aborted. */
  get stats$(): Observable<CheckpointStats> {
    return this.tracker.stats$;
  }

  /**
   * Makes ids continue after every checkpoint directory already there and recovers the completed checkpoint store
   * (`CompletedCheckpointStore.recover`).
   */
  async recover(completeIds: readonly number[]): Promise<void> {
    this.nextId = (await this.store.recover(completeIds)) + 1;
  }

  /** Whether keyed backends should track their changes: checkpoints are incremental. */
  get incremental(): boolean {
    return this.options.incremental !== undefined;
  }

  attach(participants: CheckpointParticipants): void {
    this.participants = participants;
    this.chain.reset();
    this.finalTriggered = false;
    this.finalCheckpoint = undefined;
  }

  /** The id the next checkpoint gets, which only ever grows. */
  get nextCheckpointId(): number {
    return this.nextId;
  }

  /**
   * Makes the next checkpoint's id `id` (ids only grow: a smaller one is ignored). The test harness uses it so that
   * `pushBarrier(5)` starts checkpoint 5, numbered as the test says, as Flink's harness takes the id it is given.
   */
  skipToId(id: number): void {
    this.nextId = Math.max(this.nextId, id);
  }

  /** The attempt ended: abort what is in flight; its partial files are removed. */
  detach(reason: unknown): void {
    this.participants = undefined;
    for (const pending of this.pending.values()) this.abort(pending, reason, 'aborted');
  }

  /** Whether a periodic checkpoint may start now (`maxConcurrent`, `minPause`). */
  mayTriggerPeriodic(): boolean {
    return (
      this.participants !== undefined &&
      // After the final checkpoint nothing follows but the end of input: no barrier could reach a task.
      !this.finalTriggered &&
      this.pending.size < this.options.maxConcurrent &&
      this.options.scheduler.now() - this.lastEndedAt >= this.options.minPause
    );
  }

  /**
   * Resolves once no aborted checkpoint can still become complete, so that a restore sees the final state, and the
   * checkpoints subsumed so far are removed.
   */
  async settled(): Promise<void> {
    await this.settling;
    await this.store.settled();
    await this.failures.settled();
  }

  /**
   * Starts a checkpoint (or, with `savepoint`, a savepoint into that directory) once fewer than `maxConcurrent` are
   * in flight; resolves when it is complete.
   */
  async trigger(final = false, savepoint?: SavepointTarget): Promise<CheckpointStats> {
    while (this.pending.size >= this.options.maxConcurrent) {
      await Promise.race(Array.from(this.pending.values(), (p) => p.result.catch(() => undefined)));
    }
    // Once the input has ended, the final checkpoint holds everything up to the end: a checkpoint asked for after
    // it (a job restored at the end of its input ends at once) is that one, complete or still in flight.
    if (this.finalCheckpoint && !final && !savepoint) return this.finalCheckpoint;
    const participants = this.participants;
    if (!participants) throw new CheckpointAbortedError(`job '${this.options.job}' is not running; no checkpoint was taken`);
    if (this.finalTriggered) throw new CheckpointAbortedError(`job '${this.options.job}' is finishing: its final checkpoint was taken`);
    if (final) this.finalTriggered = true;
    const { scheduler, timeout, job } = this.options;
    const id = this.nextId++;
    const barrier = new CheckpointBarrier(id, scheduler.now(), final, savepoint ? 'savepoint' : 'checkpoint');
    const position = this.chain.start(savepoint !== undefined, this.pending.size);
    const dir = savepoint ? savepointDir(savepoint.dir, job, id) : checkpointDir(job, id);
    const pending = new PendingCheckpoint(barrier, dir, savepoint?.storage ?? this.options.storage, participants, position);
    this.pending.set(id, pending);
    pending.timeout = scheduler.schedule(() => {
      if (pending.committing || pending.aborted) return;
      this.fail(pending, new CheckpointAbortedError(pending.timeoutMessage(job, timeout)), 'aborted');
    }, timeout);
    if (final && !savepoint) this.finalCheckpoint = pending.result;
    participants.beginSnapshot({ id, dir, kind: barrier.kind, delta: position.base !== undefined }, pending.storage);
    participants.injectBarrier(barrier);
    return pending.result;
  }

  /** `CheckpointAcknowledger`: a task captured its state for checkpoint `id` and is persisting it. */
  persisting(id: number, task: SnapshotTask): void {
    this.pending.get(id)?.persisting.add(taskId(task.uid, task.subtask));
  }

  /** `CheckpointAcknowledger`: a task persisted its state for checkpoint `id`; the last one completes it. */
  acknowledge(id: number, task: SnapshotTask, handles: TaskStateHandles, stats: OperatorCheckpointStats): void {
    const pending = this.pending.get(id);
    if (!pending || pending.aborted) return;
    pending.stats.push(stats);
    if (handles.keyed === 'delta') pending.deltaOperators.add(task.uid);
    else if (handles.keyed === 'full') pending.deltaOperators.delete(task.uid);
    if (pending.acknowledge(taskId(task.uid, task.subtask), handles)) this.complete(pending).catch((error: unknown) => this.fail(pending, error, 'failed'));
  }

  /** `CheckpointAcknowledger`: persisting a task's state for checkpoint `id` failed. */
  failed(id: number, _task: SnapshotTask, error: unknown): void {
    const pending = this.pending.get(id);
    if (pending) this.fail(pending, error, 'failed');
  }

  /**
   * Task `task` declined checkpoint `id`: a newer checkpoint's barrier (`by`) overtook its alignment at an operator with
   * several inputs (Flink's CHECKPOINT_DECLINED_SUBSUMED). Without that task's acknowledgement it can never complete,
   * so it is aborted now instead of holding its `maxConcurrent` slot until the timeout. As in Flink's
   * CheckpointFailureManager, a subsumed checkpoint does not count against `tolerableFailures`.
   */
  decline(id: number, task: { uid: string; subtask: number }, by: number): void {
    const pending = this.pending.get(id);
    if (!pending || pending.aborted || pending.committing) return;
    const { job } = this.options;
    this.abort(
      pending,
      new CheckpointAbortedError(
        `checkpoint ${id} of job '${job}' was subsumed by checkpoint ${by} at '${task.uid}' subtask ${task.subtask}: the newer barrier arrived ` +
          `while it was still aligning; checkpoint ${by} goes on (if this happens to most checkpoints, lower maxConcurrent or raise the interval)`,
      ),
      'aborted',
      { subsumed: true },
    );
  }

  /** Deletes every checkpoint of the job: `retainOnCancel: false`. */
  async deleteAll(): Promise<void> {
    await this.store.deleteAll();
  }

  private async complete(pending: PendingCheckpoint): Promise<void> {
    const { job, scheduler, maxParallelism } = this.options;
    const { storage } = pending;
    const savepoint = pending.barrier.kind === 'savepoint';
    const { metadata, stateBytes, sharedBytes } = pending.metadata(job, maxParallelism, scheduler.now());
    const bytes = encodeFile('metadata', metadata);
    if (pending.aborted) return;
    pending.committing = storage.write(`${pending.dir}/${METADATA_FILE}`, bytes);
    await pending.committing;
    if (pending.aborted) return;
    // From here the checkpoint exists: a restore will use it, so sinks may commit what it covers.
    this.pending.delete(pending.id);
    pending.participants.endSnapshot(pending.id);
    pending.timeout?.unsubscribe();
    this.failures.succeeded();
    this.lastEndedAt = scheduler.now();
    const stats = this.tracker.report(pending, 'completed', undefined, stateBytes + bytes.length, stateBytes + sharedBytes + bytes.length);
    if (!savepoint) {
      // Flink drops the pending checkpoints a completed one subsumes: restores would never pick them over this one.
      for (const older of this.pending.values()) {
        if (older.id < pending.id && older.barrier.kind === 'checkpoint' && !older.committing) {
          const reason = `checkpoint ${older.id} of job '${job}' was subsumed by checkpoint ${pending.id}, which completed first`;
          // Taken before this one, its snapshots are older than the chain's new head: the chain stays.
          this.abort(older, new CheckpointAbortedError(reason), 'aborted', { subsumed: true, resetChain: false });
        }
      }
      this.store.add(pending.id, metadata);
      this.chain.completed(pending.id, pending.chain, metadata.operators, stateBytes, pending.id === this.nextId - 1);
    }
    try {
      await pending.participants.notifyComplete(pending.id);
    } catch (error) {
      pending.participants.fail(error);
      pending.reject(error);
      return;
    }
    // As in Flink, subsumed checkpoints are discarded after the new one is reported complete, not before: their
    // removal (a storage round trip per directory) is not part of a checkpoint's latency.
    if (!savepoint) this.store.retire(() => this.nextId);
    pending.resolve(stats);
  }

  /** A checkpoint failed (a task, the storage, a timeout): abort it, and fail the job past the tolerated count. */
  private fail(pending: PendingCheckpoint, error: unknown, status: 'failed' | 'aborted'): void {
    if (pending.aborted) return;
    const participants = pending.participants;
    this.abort(pending, error, status);
    this.lastEndedAt = this.options.scheduler.now();
    this.failures.failed(error, (cause) => participants.fail(cause));
  }

  /**
   * Ends `pending` unsuccessfully. A `subsumed` one (a newer checkpoint took over) is reported but not recorded in the
   * failure history at rest: with `maxConcurrent > 1` it is routine, and would crowd out real failures there.
   */
  private abort(
    pending: PendingCheckpoint,
    reason: unknown,
    status: 'failed' | 'aborted',
    { subsumed = false, resetChain = true }: { subsumed?: boolean; resetChain?: boolean } = {},
  ): void {
    pending.aborted = true;
    pending.participants.endSnapshot(pending.id);
    // Its snapshots consumed the backends' changes since the chain's last checkpoint: the next one must be full.
    if (resetChain) this.chain.reset();
    pending.timeout?.unsubscribe();
    this.pending.delete(pending.id);
    const error =
      reason instanceof Error && !(reason instanceof CheckpointAbortedError) && status === 'failed'
        ? reason
        : reason instanceof CheckpointAbortedError
          ? reason
          : new CheckpointAbortedError(`checkpoint ${pending.id} of job '${this.options.job}' was aborted: ${String((reason as Error)?.message ?? reason)}`, {
              cause: reason,
            });
    pending.reject(error);
    const stats = this.tracker.report(pending, status, error, 0);
    if (!subsumed) this.failures.record(stats);
    // Operators still aligning for it release what they hold.
    pending.participants.injectCancel(pending.id);
    // A checkpoint without _metadata never counts; removing its files keeps the directory tidy. One whose metadata
    // is being written may complete after all, and a restore may then use it: its files stay.
    if (!pending.committing) pending.storage.remove(pending.dir).catch(() => undefined);
    else this.settling = pending.committing.catch(() => undefined);
  }
}
