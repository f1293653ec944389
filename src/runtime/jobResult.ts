import type { CheckpointStats } from '../checkpoint/checkpointStats.js';
import type { LoadedCheckpoint } from '../checkpoint/loadCheckpoint.js';

// What a run of a job reports about itself: how it ended, and which checkpoint it restored.

/** The checkpoint or savepoint a run, or its latest restart, restored (`running.restoredFrom`). */
export interface RestoredFrom {
  /** The checkpoint's (or savepoint's) id. */
  readonly id: number;
  /** Its directory, as `start({ restore })` takes it: `<job>/chk-<id>` in the storage, or its absolute path. */
  readonly path: string;
  readonly kind: 'checkpoint' | 'savepoint';
}

/** How a job ended. */
export interface JobResult {
  readonly status: 'finished' | 'stopped' | 'cancelled';
  /** Restarts after failures. */
  readonly restarts: number;
  /** Checkpoints completed by this run, oldest first. */
  readonly checkpoints: readonly CheckpointStats[];
  /** Every checkpoint of this run as it ended, completed, failed or aborted (see `RunningJob.checkpointHistory`). */
  readonly checkpointHistory: readonly CheckpointStats[];
  /** The path of the checkpoint the job started from, if it was restored (`running.restoredFrom` has its id too). */
  readonly restoredFrom: string | undefined;
}

/** What `running.restoredFrom` says of the checkpoint a run (or its restart) restored. */
export function describeRestore(restored: LoadedCheckpoint | undefined): RestoredFrom | undefined {
  return restored && { id: restored.metadata.id, path: restored.path, kind: restored.metadata.kind };
}
