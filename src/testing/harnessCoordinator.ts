import { Subscription, type SchedulerLike, type VirtualTimeScheduler } from 'rxjs';
import { CheckpointCoordinator, type CheckpointParticipants } from '../checkpoint/coordinator.js';
import type { CheckpointBarrier } from '../core/elements.js';
import type { CheckpointStorage } from '../core/types.js';

/**
 * The job's checkpoint coordinator, unchanged but for where barriers go: a job's sources inject them at their next
 * chunk boundary, the harness's inputs take them where the test pushes them.
 */
export class HarnessCoordinator extends CheckpointCoordinator {
  /** Keeps every checkpoint, never pauses between them nor gives up after failures: a test decides when checkpoints happen. */
  constructor(
    job: string,
    storage: CheckpointStorage,
    scheduler: VirtualTimeScheduler,
    maxParallelism: number,
    timeout: number,
    private readonly route: { barrier(barrier: CheckpointBarrier): void; cancel(id: number): void },
  ) {
    super({
      job,
      storage,
      scheduler: withoutEndlessTimeouts(scheduler),
      maxParallelism,
      retain: Number.MAX_SAFE_INTEGER,
      timeout,
      minPause: 0,
      maxConcurrent: Number.MAX_SAFE_INTEGER,
      tolerableFailures: Number.MAX_SAFE_INTEGER,
    });
  }

  override attach(participants: CheckpointParticipants): void {
    super.attach({ ...participants, injectBarrier: (barrier) => this.route.barrier(barrier), injectCancel: (id) => this.route.cancel(id) });
  }
}

/** The clock, except that an action due never (an `Infinity` timeout) is not scheduled at all. */
function withoutEndlessTimeouts(scheduler: VirtualTimeScheduler): SchedulerLike {
  return {
    now: () => scheduler.now(),
    schedule: (work: () => void, delay?: number) => (delay === undefined || Number.isFinite(delay) ? scheduler.schedule(work, delay) : new Subscription()),
  } as SchedulerLike;
}
