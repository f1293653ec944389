import type { OperatorCheckpointStats } from '../core/operatorCheckpointStats.js';

/** What `running.checkpoint()` resolves with, what `running.checkpoints` lists and `checkpoints$` emits. */
export interface CheckpointStats {
  readonly id: number;
  /** `completed`, or why it is not: `failed` (a task or the storage failed), `aborted` (timeout, cancel, job end). */
  readonly status: 'completed' | 'failed' | 'aborted';
  /** Why a checkpoint failed or was aborted: the error's message. */
  readonly reason?: string;
  /**
   * The name of the error class that failed or aborted it (`CheckpointAbortedError` for a timeout, a subsumed or a
   * cancelled checkpoint; `StateSizeExceededError`; a storage's own error), for code that branches on it.
   */
  readonly error?: string;
  /** Where the checkpoint is (a directory on disk for the file system storage): pass it to `restore`. */
  readonly path: string;
  /** When it was triggered, on the job's scheduler clock. */
  readonly timestamp: number;
  /** From trigger to metadata written (or to failure). */
  readonly durationMs: number;
  /** Bytes persisted by this checkpoint, metadata included. */
  readonly bytes: number;
  /** Size of the whole state it restores (equal to `bytes` unless checkpoints are incremental). */
  readonly fullSize: number;
  /** The checkpoint taken when the input ended. */
  readonly final: boolean;
  /** A savepoint (`running.savepoint()`, `stop({ savepoint })`) or a periodic/on-demand checkpoint. */
  readonly kind: 'checkpoint' | 'savepoint';
  readonly operators: readonly OperatorCheckpointStats[];
}
