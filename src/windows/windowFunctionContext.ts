import type { RecordTimestamp } from '../core/elements.js';
import { output } from '../operators/output.js';
import type { Output } from '../operators/processFunction.js';
import type { TimerService } from '../time/timerService.js';
import type { WindowContext } from './windowFunction.js';
import type { Window } from './windowTypes.js';

/**
 * What a window function is handed when a window fires, the same for every window operator: the firing window, the
 * operator's time, and an output whose side outputs carry the timestamp of the record being processed.
 */
export function windowFunctionContext<R>(
  timers: TimerService,
  emit: (value: R) => void,
  record: RecordTimestamp,
  firing: () => Window,
): { windowContext: WindowContext; out: Output<R> } {
  const windowContext: WindowContext = {
    get window() {
      return firing();
    },
    get currentWatermark() {
      return timers.currentWatermark;
    },
    currentProcessingTime: () => timers.currentProcessingTime(),
  };
  return { windowContext, out: output(emit, record) };
}
