import { CheckpointFailuresExceededError } from '../core/errors.js';
import type { CheckpointStorage } from '../core/types.js';
import type { CheckpointStats } from './checkpointStats.js';
import { FAILURE_HISTORY_LENGTH, failedCheckpointOf, readFailureHistory, writeFailureHistory, type FailedCheckpoint } from './failureHistory.js';

export interface FailureManagerOptions {
  readonly job: string;
  readonly storage: CheckpointStorage;
  /** Consecutive failed checkpoints tolerated before the job fails. */
  readonly tolerableFailures: number;
  /** Where warnings go (a failure history file that cannot be read or written). */
  readonly warn?: (message: string) => void;
}

/**
 * Flink's CheckpointFailureManager: counts the checkpoints that failed in a row and says when the job must fail, and
 * records each failure in the job's failure history file (`failureHistory.ts`).
 */
export class CheckpointFailureManager {
  private consecutiveFailures = 0;
  /** The job's recorded failures, read from its file before this run first adds one. */
  private failures: FailedCheckpoint[] | undefined;
  /** Writes of the failure history, one at a time. */
  private historyWrites: Promise<void> = Promise.resolve();
  private historyWarned = false;

  constructor(private readonly options: FailureManagerOptions) {}

  /** A checkpoint completed: the count of failures in a row starts again. */
  succeeded(): void {
    this.consecutiveFailures = 0;
  }

  /**
   * A checkpoint failed with `error`: past the tolerated count, `failJob` is called with what the job fails with
   * (the cause itself when nothing is tolerated).
   */
  failed(error: unknown, failJob: (error: unknown) => void): void {
    const { job, tolerableFailures } = this.options;
    if (++this.consecutiveFailures <= tolerableFailures) return;
    failJob(
      tolerableFailures === 0
        ? error
        : new CheckpointFailuresExceededError(
            `job '${job}': ${this.consecutiveFailures} checkpoints failed in a row, more than the ${tolerableFailures} tolerated; last cause: ${String((error as Error)?.message ?? error)}`,
            { cause: error },
          ),
    );
  }

  /**
   * Adds a failed or aborted checkpoint to the job's failure history file in its checkpoint storage, behind the writes
   * before it. The file is diagnostics: when it cannot be read it is started anew, and when it cannot be written (the
   * storage that failed the checkpoint may be failing) the job goes on; both are warned about, once per run.
   */
  record(stats: CheckpointStats): void {
    const { storage, job, warn } = this.options;
    const warnOnce = (message: string) => {
      if (this.historyWarned) return;
      this.historyWarned = true;
      warn?.(message);
    };
    this.historyWrites = this.historyWrites
      .then(async () => {
        this.failures ??= await readFailureHistory(storage, job).catch((error: unknown) => {
          warnOnce(`job '${job}': its failure history is ignored and started anew: ${(error as Error).message}`);
          return [];
        });
        this.failures = [...this.failures, failedCheckpointOf(stats)].slice(-FAILURE_HISTORY_LENGTH);
        await writeFailureHistory(storage, job, this.failures);
      })
      .catch((error: unknown) => warnOnce(`job '${job}': checkpoint ${stats.id} failed and could not be recorded in its failure history: ${(error as Error).message}`));
  }

  /** Resolves once the failures recorded so far are written (or given up on). */
  settled(): Promise<void> {
    return this.historyWrites;
  }
}
