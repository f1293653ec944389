import { Subject, type Observable } from 'rxjs';
import type { Scheduler } from '../core/types.js';
import type { CheckpointStats } from './checkpointStats.js';
import type { PendingCheckpoint } from './pendingCheckpoint.js';

/**
 * Flink's CheckpointStatsTracker for one job: the stats of every checkpoint as it ends, kept for `running.checkpoints`
 * and `running.checkpointHistory` and emitted on `checkpoints$`. Durations are on the job's clock.
 */
export class CheckpointStatsTracker {
  private readonly completedStats: CheckpointStats[] = [];
  private readonly endedStats: CheckpointStats[] = [];
  private readonly reports = new Subject<CheckpointStats>();

  constructor(private readonly clock: Pick<Scheduler, 'now'>) {}

  /** Every checkpoint completed by this run of the job, oldest first (deleted ones included). */
  get completed(): readonly CheckpointStats[] {
    return this.completedStats;
  }

  /** Every checkpoint of this run as it ended, oldest first: completed, failed or aborted (with its reason). */
  get ended(): readonly CheckpointStats[] {
    return this.endedStats;
  }

  /** Every checkpoint as it ends. */
  get stats$(): Observable<CheckpointStats> {
    return this.reports.asObservable();
  }

  /** `pending` ended with `status` (failed or aborted by `error`), having persisted `bytes` and restoring `fullSize`. */
  report(pending: PendingCheckpoint, status: CheckpointStats['status'], error: Error | undefined, bytes: number, fullSize = bytes): CheckpointStats {
    const { storage } = pending;
    const stats: CheckpointStats = {
      id: pending.id,
      status,
      ...(error === undefined ? {} : { reason: error.message, error: error.name }),
      path: storage.describe ? storage.describe(pending.dir) : pending.dir,
      timestamp: pending.startedAt,
      durationMs: this.clock.now() - pending.startedAt,
      bytes,
      fullSize,
      final: pending.barrier.final,
      kind: pending.barrier.kind,
      operators: pending.stats,
    };
    this.endedStats.push(stats);
    this.reports.next(stats);
    if (status === 'completed') this.completedStats.push(stats);
    return stats;
  }
}
