import type { FailedCheckpoint } from '../checkpoint/failureHistory.js';
import type { CheckpointMetadata, OperatorRole } from '../storage/layout.js';
import type { StateKind } from '../core/types.js';

// What the inspector reports of jobs, checkpoints, operators and states (`inspectStorage`, `summarizeCheckpoint`).

/** `complete`: `_metadata` and every file it names read back whole; `incomplete`: no `_metadata` (never restorable). */
export type CheckpointStatus = 'complete' | 'incomplete' | 'corrupted';

/** Checkpoints are taken by the job and retained for `restore: 'latest'`; savepoints on request, kept until removed. */
export type CheckpointKind = CheckpointMetadata['kind'];

export interface StateSummary {
  readonly name: string;
  readonly kind: StateKind;
  readonly serializer: string;
  readonly serializerVersion: number;
  /** Whether values are saved with their last-access times (a state with a TTL). */
  readonly ttl: boolean;
  /** Distinct keys holding a value. */
  readonly keys: number;
  /** Key × namespace (window) entries. */
  readonly entries: number;
  /** Distinct namespaces besides the default one (windows). */
  readonly namespaces: number;
  /** UTF-8 bytes of the encoded keys and values. */
  readonly bytes: number;
  /** `[keyGroup, keys]` for every non-empty key group: skew shows here. */
  readonly keyGroups: [number, number][];
}

export interface OperatorSummary {
  readonly uid: string;
  readonly role: OperatorRole;
  readonly files: { file: string; bytes: number; keyGroups: [number, number] | null; error?: string }[];
  /** Bytes of the operator's files. */
  readonly bytes: number;
  /** UTF-8 bytes of its operator (non-keyed) state, e.g. a source offset; 0 without. */
  readonly operatorStateBytes: number;
  readonly states: StateSummary[];
}

/** A checkpoint or savepoint directory, known by its name before anything in it is read. */
export interface CheckpointRef {
  readonly kind: CheckpointKind;
  /** The job's name. */
  readonly job: string;
  readonly id: number;
  /** Its directory in the storage, e.g. `clicks/chk-3` or `savepoints/savepoint-clicks-4-1a2b3c4d`. */
  readonly path: string;
}

export interface CheckpointSummary extends CheckpointRef {
  readonly status: CheckpointStatus;
  /** Why it is corrupted (or incomplete). */
  readonly error?: string;
  /** When it was triggered (ms since the epoch on the job's clock); unknown without `_metadata`. */
  readonly timestamp?: number;
  readonly durationMs?: number;
  /** Bytes the checkpoint wrote, metadata included. */
  readonly persistedBytes?: number;
  /** Bytes of every file in its directory. */
  readonly fullBytes: number;
  readonly maxParallelism?: number;
  readonly operators: OperatorSummary[];
}

export interface JobSummary {
  /** The job's name. */
  readonly job: string;
  /** Its `chk-<id>` directories, oldest first. */
  readonly checkpoints: CheckpointSummary[];
  /** Its savepoints under the inspected root, by id. */
  readonly savepoints: CheckpointSummary[];
  /**
   * Its recent checkpoints that failed or were aborted, oldest first, with their reasons: they left no directory,
   * so they come from the job's `_failed_checkpoints` file. Empty when a single checkpoint or savepoint is inspected.
   */
  readonly failures: FailedCheckpoint[];
  /** Why the failure history could not be read (it is then ignored: nothing else depends on it). */
  readonly failuresError?: string;
}

export type { ProgressListener } from '../core/progress.js';
