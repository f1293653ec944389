import type { VirtualTimeScheduler } from 'rxjs';

/** Moves a virtual clock to `time` (if later), running every action due by then in time order. */
export function advanceTo(scheduler: VirtualTimeScheduler, time: number): void {
  const to = Math.max(time, scheduler.frame);
  scheduler.maxFrames = to;
  scheduler.flush();
  scheduler.frame = to;
  scheduler.maxFrames = Infinity;
}
