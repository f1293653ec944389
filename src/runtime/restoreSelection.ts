import type { CheckpointCoordinator } from '../checkpoint/coordinator.js';
import { checkpointDir } from '../storage/layout.js';
import { completedCheckpointIds, loadCheckpoint, loadLatestCheckpoint, type LoadedCheckpoint } from '../checkpoint/loadCheckpoint.js';
import { CheckpointCorruptedError, CheckpointNotFoundError, JobDefinitionError, NonRestoredStateError, StateMigrationError } from '../core/errors.js';
import type { CheckpointStorage } from '../core/types.js';

/** What a job restores from: `'latest'`, a checkpoint's path, or a savepoint (in another storage, perhaps). */
// eslint-disable-next-line @typescript-eslint/no-redundant-type-constituents -- 'latest' is spelled out for readers and editors' completion
export type RestoreFrom = 'latest' | string | { savepoint: string; storage?: CheckpointStorage; job?: string };

export interface RestoreSelectionOptions {
  readonly job: string;
  /** The job's checkpoint storage and coordinator; undefined with checkpointing off. */
  readonly storage: CheckpointStorage | undefined;
  readonly coordinator: CheckpointCoordinator | undefined;
  /** How many completed checkpoints are kept: a restart tries them newest first. */
  readonly retain: number;
  readonly maxParallelism: number;
  /** The uids of the job's operators, which restored state must belong to. */
  readonly uids: ReadonlySet<string>;
  readonly onWarning: (message: string) => void;
}

/**
 * Which checkpoint a job's attempt restores from (Flink's restore from a savepoint or the latest checkpoint at
 * submission, and the fallback to older checkpoints on a restart), and whether its state fits the job.
 */
export class RestoreSelection {
  /** The storage of the checkpoint or savepoint the run started from. */
  private startStorage: CheckpointStorage | undefined;
  /** The job that took the savepoint the run started from, when it had another name (`restore.job`). */
  private startJob: string | undefined;

  constructor(private readonly options: RestoreSelectionOptions) {}

  /** The checkpoint the first attempt restores, checked against the job; the coordinator recovers its history first. */
  async atStart(restore: RestoreFrom | undefined, allowNonRestoredState: boolean): Promise<LoadedCheckpoint | undefined> {
    const { job, storage, coordinator, onWarning } = this.options;
    if (restore !== undefined && !storage) {
      throw new JobDefinitionError(`job '${job}' cannot restore: it has checkpointing off; pass the checkpoints option with the storage to restore from`);
    }
    if (!storage || !coordinator) return undefined;
    if (typeof restore === 'object') {
      this.startStorage = restore.storage ?? storage;
      this.startJob = restore.job;
    }
    const restored =
      restore === undefined
        ? undefined
        : restore === 'latest'
          ? await loadLatestCheckpoint(storage, job, onWarning)
          : typeof restore === 'string'
            ? await loadCheckpoint(storage, restore, job)
            : await loadCheckpoint(this.startStorage!, restore.savepoint, restore.job ?? job);
    if (restored) this.checkOperatorsMatch(restored, allowNonRestoredState);
    await coordinator.recover(await completedCheckpointIds(storage, job));
    // Ids continue after the restored checkpoint's, as Flink's counter does after a savepoint: a sink's transaction
    // ids are made of checkpoint ids (toNats's message ids), so a run restored into a directory of its own must not
    // number its checkpoints from 1 again and reuse the ids of what the run before it published.
    if (restored) coordinator.skipToId(restored.metadata.id + 1);
    return restored;
  }

  /**
   * After a failure: the newest retained checkpoint that loads, then the one the run started from; damaged or missing
   * ones are skipped with a warning.
   */
  async afterFailure(startedFrom: LoadedCheckpoint | undefined): Promise<LoadedCheckpoint | undefined> {
    const { job, storage, coordinator, retain, onWarning } = this.options;
    if (!storage || !coordinator) return undefined;
    const candidates: [CheckpointStorage, string, string][] = coordinator.history
      .filter((stats) => stats.kind === 'checkpoint')
      .slice(-retain)
      .reverse()
      .map((stats) => [storage, checkpointDir(job, stats.id), job]);
    if (startedFrom) candidates.push([this.startStorage ?? storage, startedFrom.path, this.startJob ?? job]);
    for (const [from, dir, owner] of candidates) {
      try {
        return await loadCheckpoint(from, dir, owner);
      } catch (error) {
        if (!(error instanceof CheckpointCorruptedError || error instanceof CheckpointNotFoundError)) throw error;
        onWarning(`restart: checkpoint ${dir} cannot be restored (${error.message}); trying an older one`);
      }
    }
    return undefined;
  }

  private checkOperatorsMatch(restored: LoadedCheckpoint, allowNonRestoredState: boolean): void {
    const { maxParallelism, uids } = this.options;
    if (restored.metadata.maxParallelism !== maxParallelism) {
      // Keyed state is organised by key group: another number of groups would send keys to other groups.
      throw new StateMigrationError(
        `${restored.path} was taken with maxParallelism ${restored.metadata.maxParallelism}, this job has ${maxParallelism}; ` +
          `maxParallelism is fixed once state exists: set it to ${restored.metadata.maxParallelism} (parallelism may change)`,
      );
    }
    const missing = Array.from(restored.states.keys()).filter((uid) => !uids.has(uid));
    if (missing.length > 0 && !allowNonRestoredState) {
      throw new NonRestoredStateError(
        `checkpoint ${restored.path} holds state for operators this job does not have: ${missing.map((uid) => `'${uid}'`).join(', ')}; ` +
          'give those operators back their uids, or start with allowNonRestoredState: true to drop that state',
        { checkpoint: restored.path, uids: missing },
      );
    }
  }
}
