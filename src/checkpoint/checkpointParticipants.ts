import type { CheckpointBarrier } from '../core/elements.js';
import type { OperatorRole } from '../core/graph.js';
import type { CheckpointStorage } from '../core/types.js';
import type { SnapshotTarget } from '../task/snapshotWriter.js';

/** One acknowledging task: an operator instance. */
export interface CheckpointTask {
  readonly uid: string;
  readonly subtask: number;
  readonly role: OperatorRole;
}

/** The key of a task in `CheckpointParticipants.tasks`. */
export function taskId(uid: string, subtask: number): string {
  return `${uid}#${subtask}`;
}

/**
 * What the coordinator needs from the running attempt of a job: the messages it sends to the task side. Their
 * arguments are plain data (but for the storage a snapshot goes to), so they can cross to tasks in a worker.
 */
export interface CheckpointParticipants {
  /** Every task that acknowledges a checkpoint, by `taskId(uid, subtask)`. */
  readonly tasks: ReadonlyMap<string, CheckpointTask>;
  /** Checkpoint `target` starts: the tasks' snapshot writer learns where its state files go. */
  beginSnapshot(target: SnapshotTarget, storage: CheckpointStorage): void;
  /** Checkpoint `id` was aborted or completed: the snapshot writer writes nothing more for it. */
  endSnapshot(id: number): void;
  /** Asks every source to put the barrier into its flow at its next chunk boundary. */
  injectBarrier(barrier: CheckpointBarrier): void;
  /** Asks every source to send a cancellation marker for an aborted checkpoint, to release aligning operators. */
  injectCancel(id: number): void;
  /** The checkpoint is complete: sinks commit. */
  notifyComplete(id: number): Promise<void>;
  /** Checkpoints failed more often in a row than tolerated: the attempt fails with the last cause. */
  fail(error: unknown): void;
}
