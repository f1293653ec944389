import type { Subscription } from 'rxjs';
import type { CheckpointBarrier } from '../core/elements.js';
import type { OperatorRole } from '../core/graph.js';
import type { OperatorCheckpointStats } from '../core/operatorCheckpointStats.js';
import type { CheckpointStorage } from '../core/types.js';
import type { CheckpointMetadata, StateFileEntry } from '../storage/layout.js';
import type { TaskStateHandles } from '../task/snapshotWriter.js';
import type { CheckpointStats } from './checkpointStats.js';
import type { CheckpointParticipants } from './checkpointParticipants.js';
import { filesOnChain, type ChainPosition } from './incrementalChain.js';

/**
 * One checkpoint in flight (Flink's PendingCheckpoint): the tasks that must still acknowledge it, the state files and
 * stats they acknowledged, and the promise its trigger waits on.
 */
export class PendingCheckpoint {
  /** Settles as the checkpoint ends: with its stats once complete, with the reason it failed or was aborted. */
  readonly result: Promise<CheckpointStats>;
  private settle!: { resolve(stats: CheckpointStats): void; reject(error: unknown): void };
  /** Tasks that have not acknowledged yet, by `taskId`. */
  readonly waiting: Set<string>;
  /** Tasks that captured their state (their barrier arrived) but have not acknowledged yet: still persisting. */
  readonly persisting = new Set<string>();
  readonly operators = new Map<string, { role: OperatorRole; files: StateFileEntry[] }>();
  readonly stats: OperatorCheckpointStats[] = [];
  /** Operators whose tasks all wrote deltas: their files go on top of the chain's. */
  readonly deltaOperators = new Set<string>();
  aborted = false;
  timeout?: Subscription;
  /** Set while `_metadata` is being written: from then on the checkpoint may exist, so its files must stay. */
  committing?: Promise<void>;

  constructor(
    readonly barrier: CheckpointBarrier,
    /** Its directory, in `storage`. */
    readonly dir: string,
    readonly storage: CheckpointStorage,
    /** The attempt it was triggered in. */
    readonly participants: CheckpointParticipants,
    /** Where it starts in the incremental chain. */
    readonly chain: ChainPosition,
  ) {
    this.waiting = new Set(participants.tasks.keys());
    this.result = new Promise<CheckpointStats>((resolve, reject) => (this.settle = { resolve, reject }));
  }

  resolve(stats: CheckpointStats): void {
    this.settle.resolve(stats);
  }

  reject(error: unknown): void {
    this.settle.reject(error);
  }

  get id(): number {
    return this.barrier.id;
  }

  /** When it was triggered, on the job's clock. */
  get startedAt(): number {
    return this.barrier.timestamp;
  }

  /** `task` persisted `handles`: true when it was the last task to acknowledge. */
  acknowledge(task: string, handles: TaskStateHandles): boolean {
    this.persisting.delete(task);
    if (this.aborted || !this.waiting.delete(task)) return false;
    const { uid, role } = this.participants.tasks.get(task)!;
    const operator = this.operators.get(uid) ?? { role, files: [] };
    operator.files.push(...handles.files);
    this.operators.set(uid, operator);
    return this.waiting.size === 0;
  }

  /**
   * Its `_metadata`, every task having acknowledged, at `now`: the bytes its tasks wrote (`stateBytes`) and those of
   * the earlier checkpoints' files it references (`sharedBytes`).
   */
  metadata(job: string, maxParallelism: number, now: number): { metadata: CheckpointMetadata; stateBytes: number; sharedBytes: number } {
    const stateBytes = this.stats.reduce((sum, op) => sum + op.bytes, 0);
    const operators = Array.from(this.operators, ([uid, { role, files }]) => ({ uid, role, files: filesOnChain(this.chain, uid, files, this.deltaOperators.has(uid)) }));
    const sharedBytes = operators.reduce((sum, { files }) => sum + files.reduce((n, entry) => n + (entry.checkpoint === undefined ? 0 : entry.bytes), 0), 0);
    const metadata: CheckpointMetadata = {
      job,
      id: this.id,
      kind: this.barrier.kind,
      timestamp: this.startedAt,
      maxParallelism,
      operators,
      stats: { durationMs: now - this.startedAt, bytes: stateBytes, fullSize: stateBytes + sharedBytes, operators: this.stats },
    };
    return { metadata, stateBytes, sharedBytes };
  }

  /**
   * Why it timed out after `timeout` ms, naming the tasks that did not acknowledge: those whose barrier never arrived
   * (blocked upstream, or aligning at an operator with several inputs) and those still persisting their state. Only
   * the latter are helped by a longer timeout or smaller state.
   */
  timeoutMessage(job: string, timeout: number): string {
    const name = (task: string) => {
      const { uid, subtask } = this.participants.tasks.get(task)!;
      return `'${uid}' subtask ${subtask}`;
    };
    const waiting = [...this.waiting];
    const persisting = waiting.filter((task) => this.persisting.has(task)).map(name);
    const unreached = waiting.filter((task) => !this.persisting.has(task)).map(name);
    // A job with many subtasks would make the message unreadable: the first ten, and how many more.
    const list = (names: string[]) => (names.length <= 10 ? names.join(', ') : `${names.slice(0, 10).join(', ')} and ${names.length - 10} more`);
    const head = `checkpoint ${this.id} of job '${job}' did not complete within ${timeout} ms and was aborted`;
    const parts: string[] = [];
    if (unreached.length > 0) {
      parts.push(
        `its barrier never reached ${list(unreached)}: the flow before them is stuck (a source waiting for input, a slow function, or an ` +
          'operator with several inputs waiting for the barrier on another input); find what holds them up',
      );
    }
    if (persisting.length > 0) parts.push(`still persisting their state: ${list(persisting)}; raise checkpoints.timeout, make state smaller or use faster storage`);
    // (With every task acknowledged, `_metadata` is being written, which a timeout does not cut short.)
    return parts.length === 0 ? head : `${head}: ${parts.join('; ')}`;
  }
}
