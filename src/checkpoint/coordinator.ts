import { CheckpointBarrier } from '../core/elements';
import { CheckpointAbortedError, StateSizeExceededError } from '../core/errors';
import type { CheckpointStorage, KeyGroupRange, Scheduler } from '../core/types';
import { yieldToEventLoop } from '../core/yieldToEventLoop';
import type { CheckpointStats } from './checkpointStats';
import { encodeFile } from './fileFormat';
import {
  METADATA_FILE,
  checkpointDir,
  checkpointIdOf,
  stateFileName,
  type CheckpointMetadata,
  type OperatorRole,
  type OperatorStatePayload,
  type StateFileEntry,
} from './layout';

/** What the coordinator needs from the running attempt of a job. */
export interface CheckpointParticipants {
  /** Every task that acknowledges a checkpoint, by uid. */
  readonly tasks: ReadonlyMap<string, OperatorRole>;
  /** Asks every source to put the barrier into its flow at its next chunk boundary. */
  injectBarrier(barrier: CheckpointBarrier): void;
  /** The checkpoint is complete: sinks commit. */
  notifyComplete(id: number): Promise<void>;
  /** A checkpoint failed; with no tolerable failures, the attempt fails with it. */
  fail(error: unknown): void;
}

export interface CoordinatorOptions {
  job: string;
  storage: CheckpointStorage;
  scheduler: Scheduler;
  maxParallelism: number;
  /** How many completed checkpoints to keep (Flink's `state.checkpoints.num-retained`). */
  retain: number;
}

interface PendingCheckpoint {
  readonly id: number;
  readonly dir: string;
  readonly barrier: CheckpointBarrier;
  readonly startedAt: number;
  readonly participants: CheckpointParticipants;
  readonly waiting: Set<string>;
  readonly operators: Map<string, { role: OperatorRole; files: StateFileEntry[] }>;
  readonly result: Promise<CheckpointStats>;
  resolve(stats: CheckpointStats): void;
  reject(error: unknown): void;
  aborted: boolean;
  /** Set while `_metadata` is being written: from then on the checkpoint may exist, so its files must stay. */
  committing?: Promise<void>;
}

/**
 * Flink's CheckpointCoordinator for one job, across its attempts: triggers checkpoints, collects the tasks'
 * acknowledgements, writes `_metadata` last (only then is a checkpoint complete), tells sinks to commit, and deletes
 * checkpoints beyond the retained ones. One checkpoint is in flight at a time.
 */
export class CheckpointCoordinator {
  private nextId = 1;
  private pending: PendingCheckpoint | undefined;
  private participants: CheckpointParticipants | undefined;
  private readonly completed: CheckpointStats[] = [];
  /**
   * Ids of the complete checkpoints in storage, oldest first, earlier runs' included: as Flink recovers its completed
   * checkpoint store, a restarted job keeps `retain` checkpoints in all, not `retain` of its own next to stale ones.
   */
  private retained: number[] = [];
  /** A metadata write still in flight after its checkpoint was aborted; a restore waits for it. */
  private settling: Promise<void> = Promise.resolve();

  constructor(private readonly options: CoordinatorOptions) {}

  /** Every checkpoint completed by this run of the job, oldest first (deleted ones included). */
  get history(): readonly CheckpointStats[] {
    return this.completed;
  }

  /**
   * Makes ids continue after every checkpoint directory already there, counts the complete ones for retention, and
   * removes the directories that never got their `_metadata` (left by a crash): they can never be restored.
   */
  async recover(completeIds: readonly number[]): Promise<void> {
    const { storage, job } = this.options;
    const ids = (await storage.list(job)).map(checkpointIdOf).filter((id): id is number => id !== undefined);
    this.nextId = Math.max(0, ...ids) + 1;
    this.retained = [...completeIds].sort((a, b) => a - b);
    await Promise.all(ids.filter((id) => !completeIds.includes(id)).map((id) => storage.remove(checkpointDir(job, id))));
  }

  attach(participants: CheckpointParticipants): void {
    this.participants = participants;
  }

  /** The attempt ended: abort what is in flight; its partial files are removed. */
  detach(reason: unknown): void {
    this.participants = undefined;
    if (this.pending) this.abort(this.pending, reason);
  }

  /** Resolves once no aborted checkpoint can still become complete, so that a restore sees the final state. */
  settled(): Promise<void> {
    return this.settling;
  }

  get busy(): boolean {
    return this.pending !== undefined;
  }

  /** Starts a checkpoint once the one in flight (if any) has ended; resolves when it is complete. */
  async trigger(final = false): Promise<CheckpointStats> {
    while (this.pending) await this.pending.result.catch(() => undefined);
    const participants = this.participants;
    if (!participants) throw new CheckpointAbortedError(`job '${this.options.job}' is not running; no checkpoint was taken`);
    const id = this.nextId++;
    let resolve!: (stats: CheckpointStats) => void;
    let reject!: (error: unknown) => void;
    const result = new Promise<CheckpointStats>((res, rej) => ((resolve = res), (reject = rej)));
    const now = this.options.scheduler.now();
    const pending: PendingCheckpoint = {
      id,
      dir: checkpointDir(this.options.job, id),
      barrier: new CheckpointBarrier(id, now, final),
      startedAt: now,
      participants,
      waiting: new Set(participants.tasks.keys()),
      operators: new Map(),
      result,
      resolve,
      reject,
      aborted: false,
    };
    this.pending = pending;
    participants.injectBarrier(pending.barrier);
    return result;
  }

  /**
   * A task captured its state for checkpoint `id`: persist it off the processing path, then acknowledge. `produce`
   * runs on a later macrotask, so the barrier has travelled on before the state is materialised and encoded.
   */
  persist(id: number, uid: string, range: KeyGroupRange | undefined, produce: () => Promise<OperatorStatePayload>, release?: () => void): void {
    const pending = this.pending;
    if (!pending || pending.id !== id || pending.aborted) {
      release?.();
      return;
    }
    const { storage } = this.options;
    yieldToEventLoop()
      .then(async () => {
        if (pending.aborted) return;
        const bytes = encodeFile('state', await produce());
        if (storage.maxStateSize !== undefined && bytes.length > storage.maxStateSize) {
          throw new StateSizeExceededError(
            `operator '${uid}': its snapshot for checkpoint ${id} is ${bytes.length} bytes, over the ${storage.maxStateSize}-byte limit of ` +
              `${storage.location} checkpoint storage; use a file system storage or raise maxStateSize`,
          );
        }
        const file = stateFileName(uid, 0, range);
        if (pending.aborted) return;
        await storage.write(`${pending.dir}/${file}`, bytes);
        this.acknowledge(pending, uid, { file, subtask: 0, keyGroups: range ? [range.start, range.end] : null, bytes: bytes.length });
      })
      .catch((error: unknown) => this.decline(pending, error))
      .finally(() => release?.());
  }

  private acknowledge(pending: PendingCheckpoint, uid: string, file: StateFileEntry): void {
    if (pending.aborted || !pending.waiting.delete(uid)) return;
    const role = pending.participants.tasks.get(uid)!;
    const operator = pending.operators.get(uid) ?? { role, files: [] };
    operator.files.push(file);
    pending.operators.set(uid, operator);
    if (pending.waiting.size === 0) this.complete(pending).catch((error: unknown) => this.decline(pending, error));
  }

  private async complete(pending: PendingCheckpoint): Promise<void> {
    const { storage, job, scheduler, maxParallelism } = this.options;
    const stateBytes = Array.from(pending.operators.values()).reduce((sum, op) => sum + op.files.reduce((s, f) => s + f.bytes, 0), 0);
    const metadata: CheckpointMetadata = {
      job,
      id: pending.id,
      kind: 'checkpoint',
      timestamp: pending.startedAt,
      maxParallelism,
      operators: Array.from(pending.operators, ([uid, { role, files }]) => ({ uid, role, files })),
      stats: { durationMs: scheduler.now() - pending.startedAt, bytes: stateBytes },
    };
    const bytes = encodeFile('metadata', metadata);
    if (pending.aborted) return;
    pending.committing = storage.write(`${pending.dir}/${METADATA_FILE}`, bytes);
    await pending.committing;
    if (pending.aborted) return;
    // From here the checkpoint exists: a restore will use it, so sinks may commit what it covers.
    this.pending = undefined;
    const stats: CheckpointStats = {
      id: pending.id,
      path: storage.describe ? storage.describe(pending.dir) : pending.dir,
      timestamp: pending.startedAt,
      durationMs: scheduler.now() - pending.startedAt,
      bytes: stateBytes + bytes.length,
      final: pending.barrier.final,
    };
    this.completed.push(stats);
    this.retained.push(pending.id);
    try {
      await pending.participants.notifyComplete(pending.id);
    } catch (error) {
      pending.participants.fail(error);
      pending.reject(error);
      return;
    }
    await this.applyRetention();
    pending.resolve(stats);
  }

  /** Keeps the newest `retain` completed checkpoints; older directories go, complete or not. */
  private async applyRetention(): Promise<void> {
    const { storage, job, retain } = this.options;
    this.retained = this.retained.slice(-retain);
    const oldestKept = this.retained[0] ?? this.nextId;
    const ids = (await storage.list(job)).map(checkpointIdOf).filter((id): id is number => id !== undefined && id < oldestKept);
    await Promise.all(ids.map((id) => storage.remove(checkpointDir(job, id))));
  }

  private decline(pending: PendingCheckpoint, error: unknown): void {
    if (pending.aborted) return;
    this.abort(pending, error);
    pending.participants.fail(error);
  }

  private abort(pending: PendingCheckpoint, reason: unknown): void {
    pending.aborted = true;
    if (this.pending === pending) this.pending = undefined;
    pending.reject(
      reason instanceof Error && !(reason instanceof CheckpointAbortedError)
        ? reason
        : new CheckpointAbortedError(`checkpoint ${pending.id} of job '${this.options.job}' was aborted: ${String((reason as Error)?.message ?? reason)}`, {
            cause: reason,
          }),
    );
    // A checkpoint without _metadata never counts; removing its files keeps the directory tidy. One whose metadata
    // is being written may complete after all, and a restore may then use it: its files stay.
    if (!pending.committing) this.options.storage.remove(pending.dir).catch(() => undefined);
    else this.settling = pending.committing.catch(() => undefined);
  }
}
