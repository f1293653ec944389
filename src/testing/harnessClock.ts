import { VirtualTimeScheduler } from 'rxjs';

/**
 * Moves a virtual clock to `time`, running every action due by then in time order (timers, watermark intervals,
 * checkpoint timeouts), then leaves the clock at `time`. Works for a `TestScheduler` outside `run()` as well.
 */
export function advanceClock(scheduler: VirtualTimeScheduler, time: number): void {
  const to = Math.max(time, scheduler.frame);
  const maxFrames = scheduler.maxFrames;
  scheduler.maxFrames = to;
  try {
    scheduler.flush();
  } finally {
    scheduler.maxFrames = maxFrames;
  }
  scheduler.frame = to;
}

/** A fresh virtual clock reading `startTime`. */
export function harnessClock(startTime = 0): VirtualTimeScheduler {
  const scheduler = new VirtualTimeScheduler();
  scheduler.frame = startTime;
  return scheduler;
}
