import { CheckpointCorruptedError, CheckpointNotFoundError } from '../core/errors.js';
import type { CheckpointStorage } from '../core/types.js';
import type { CheckpointStats } from './checkpointStats.js';
import { decodeFile, encodeFile } from '../storage/fileFormat.js';
import { FAILURE_HISTORY_FILE } from '../storage/layout.js';

/**
 * The recent checkpoints of a job that failed or were aborted, kept in `<job>/_failed_checkpoints` beside its
 * `chk-<id>` directories: a failed checkpoint leaves no `_metadata` and its directory is removed, so without this file
 * nothing at rest would say it happened or why (Flink keeps the same in its checkpoint history of the web UI). The
 * coordinator rewrites the file (one atomic write, a weir file: versioned and checksummed) after each failure; the
 * inspector reads it. Restore never reads it, so a damaged one cannot stop a job from restoring.
 */

/** One failed or aborted checkpoint (or savepoint) as the history file keeps it. */
export interface FailedCheckpoint {
  readonly id: number;
  readonly kind: CheckpointStats['kind'];
  readonly status: 'failed' | 'aborted';
  /** The error's message. */
  readonly reason: string;
  /** The error's class name (`CheckpointAbortedError`, `StateSizeExceededError`, a storage's error). */
  readonly error: string;
  /** When it was triggered, on the job's clock. */
  readonly timestamp: number;
  /** From trigger to failure. */
  readonly durationMs: number;
  readonly final: boolean;
}

/** The history file's payload. */
interface FailureHistoryPayload {
  job: string;
  /** Oldest first. */
  failures: FailedCheckpoint[];
}

/** How many failures the file keeps: the most recent. */
export const FAILURE_HISTORY_LENGTH = 20;

/** The path of a job's history file in its storage. */
export function failureHistoryPath(job: string): string {
  return `${job}/${FAILURE_HISTORY_FILE}`;
}

/**
 * The failures recorded for `job`, oldest first; empty when there is no history file. A damaged or foreign file is a
 * `CheckpointCorruptedError` naming it.
 */
export async function readFailureHistory(storage: CheckpointStorage, job: string): Promise<FailedCheckpoint[]> {
  const path = failureHistoryPath(job);
  const name = storage.describe ? storage.describe(path) : `${storage.location}: ${path}`;
  let bytes: Uint8Array;
  try {
    bytes = await storage.read(path);
  } catch (error) {
    if (error instanceof CheckpointNotFoundError) return [];
    throw error;
  }
  const payload = decodeFile('history', bytes, name) as FailureHistoryPayload;
  if (payload === null || typeof payload !== 'object' || payload.job !== job || !Array.isArray(payload.failures) || !payload.failures.every(isFailedCheckpoint)) {
    throw new CheckpointCorruptedError(`${name}: not the failure history of job '${job}'; the file is damaged or foreign (remove it: a new one is written at the next failure)`);
  }
  return payload.failures;
}

/** Writes `failures` (the most recent `FAILURE_HISTORY_LENGTH`) as `job`'s history file, atomically. */
export async function writeFailureHistory(storage: CheckpointStorage, job: string, failures: readonly FailedCheckpoint[]): Promise<void> {
  const payload: FailureHistoryPayload = { job, failures: failures.slice(-FAILURE_HISTORY_LENGTH) };
  await storage.write(failureHistoryPath(job), encodeFile('history', payload));
}

/** The history entry of a failed or aborted checkpoint's stats. */
export function failedCheckpointOf(stats: CheckpointStats): FailedCheckpoint {
  return {
    id: stats.id,
    kind: stats.kind,
    status: stats.status === 'failed' ? 'failed' : 'aborted',
    reason: stats.reason ?? '',
    error: stats.error ?? 'Error',
    timestamp: stats.timestamp,
    durationMs: stats.durationMs,
    final: stats.final,
  };
}

function isFailedCheckpoint(value: unknown): value is FailedCheckpoint {
  const entry = value as FailedCheckpoint | null;
  return (
    entry !== null &&
    typeof entry === 'object' &&
    Number.isSafeInteger(entry.id) &&
    (entry.kind === 'checkpoint' || entry.kind === 'savepoint') &&
    (entry.status === 'failed' || entry.status === 'aborted') &&
    typeof entry.reason === 'string' &&
    typeof entry.error === 'string' &&
    typeof entry.timestamp === 'number' &&
    typeof entry.durationMs === 'number' &&
    typeof entry.final === 'boolean'
  );
}
