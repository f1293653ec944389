/** What `running.checkpoint()` resolves with, and what `running.checkpoints` lists. */
export interface CheckpointStats {
  readonly id: number;
  /** Where the checkpoint is (a directory on disk for the file system storage): pass it to `restore`. */
  readonly path: string;
  /** When it was triggered, on the job's scheduler clock. */
  readonly timestamp: number;
  /** From trigger to metadata written. */
  readonly durationMs: number;
  /** Bytes persisted, metadata included. */
  readonly bytes: number;
  /** The checkpoint taken when the input ended. */
  readonly final: boolean;
}
