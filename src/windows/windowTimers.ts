import type { Watermark } from '../core/elements.js';
import type { TaskContext } from '../core/graph.js';
import type { KeyedStateBackend } from '../core/types.js';
import { TimerService, savedTimers, type TimerCallback } from '../time/timerService.js';
import { UserFunctionGuard } from '../core/userFunctionFailure.js';

/**
 * A window operator instance's timers: those its predecessors saved for its key groups restored (rescaling), and a
 * callback that throws failing the task rather than escaping into the scheduler.
 */
export function windowTimers(backend: KeyedStateBackend, task: TaskContext, fail: (error: unknown) => void, onTimer: TimerCallback): TimerService {
  const guard = new UserFunctionGuard(fail);
  const timers = new TimerService(backend, task.scheduler, (domain, time, key, namespace) => guard.attempt(() => onTimer(domain, time, key, namespace)));
  const saved = savedTimers(task.restoredOperatorStates);
  if (saved.length > 0) timers.restore(saved, task.maxParallelism, task.keyGroupRange);
  return timers;
}

/**
 * The part of a window operator's handler that only its timers need, the same for every window operator: a watermark
 * fires the event-time timers it passes before it moves on, and the timers are saved with the operator's state.
 */
export function timerHandlers(timers: TimerService) {
  return {
    onWatermark(watermark: Watermark, forward: () => void): void {
      timers.advanceWatermark(watermark.timestamp);
      forward();
    },
    snapshotOperatorState: () => ({ timers: timers.snapshot() }),
    dispose: () => timers.dispose(),
  };
}
