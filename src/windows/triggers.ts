import { JobDefinitionError } from '../core/errors.js';
import type { Trigger, TriggerResult } from './windowTypes.js';

/**
 * Fires when the watermark passes the window's end (Flink's EventTimeTrigger); a late element within the allowed
 * lateness fires the window again at once.
 */
export function eventTimeTrigger(): Trigger {
  return {
    name: 'eventTime',
    onElement(_timestamp, window, ctx) {
      if (window.maxTimestamp <= ctx.currentWatermark) return 'fire';
      ctx.registerEventTimeTimer(window.maxTimestamp);
      return 'continue';
    },
    onEventTime: (time, window) => (time === window.maxTimestamp ? 'fire' : 'continue'),
    onProcessingTime: () => 'continue',
    onMerge(window, _merged, ctx) {
      if (window.maxTimestamp > ctx.currentWatermark) ctx.registerEventTimeTimer(window.maxTimestamp);
    },
    clear: (window, ctx) => ctx.deleteEventTimeTimer(window.maxTimestamp),
  };
}

/** Fires when the processing-time clock passes the window's end (Flink's ProcessingTimeTrigger). */
export function processingTimeTrigger(): Trigger {
  return {
    name: 'processingTime',
    onElement(_timestamp, window, ctx) {
      ctx.registerProcessingTimeTimer(window.maxTimestamp);
      return 'continue';
    },
    onEventTime: () => 'continue',
    onProcessingTime: (time, window) => (time >= window.maxTimestamp ? 'fire' : 'continue'),
    onMerge: (window, _merged, ctx) => ctx.registerProcessingTimeTimer(window.maxTimestamp),
    clear: (window, ctx) => ctx.deleteProcessingTimeTimer(window.maxTimestamp),
  };
}

/** Never fires: the global window's default; pair `globalWindow()` with another trigger. */
export function neverTrigger(): Trigger {
  return {
    name: 'never',
    onElement: () => 'continue',
    onEventTime: () => 'continue',
    onProcessingTime: () => 'continue',
    clear: () => undefined,
  };
}

/**
 * Fires every `n` elements of a window (Flink's CountTrigger); the count lives in state per key and window.
 * @example keyed.pipe(window(globalWindow(), { trigger: count(100) }), reduce(sum, { uid: 'per-100' }))
 */
export function count(n: number): Trigger {
  if (!(Number.isInteger(n) && n > 0)) throw new JobDefinitionError(`count(${n}): the count must be a positive integer`);
  return {
    name: `count(${n})`,
    onElement(_timestamp, _window, ctx) {
      const seen = ctx.state<number>('count');
      const next = (seen.get() ?? 0) + 1;
      if (next >= n) {
        seen.set(undefined);
        return 'fire';
      }
      seen.set(next);
      return 'continue';
    },
    onEventTime: () => 'continue',
    onProcessingTime: () => 'continue',
    onMerge(window, merged, ctx) {
      const total = merged.reduce((sum, w) => sum + (ctx.state<number>('count', w).get() ?? 0), 0);
      ctx.state<number>('count', window).set(total === 0 ? undefined : total);
    },
    clear: (_window, ctx) => ctx.state<number>('count').set(undefined),
  };
}

/**
 * Turns every `fire` of `trigger` into `fire-and-purge`: the window's contents are emitted and dropped, so the next
 * firing starts afresh instead of accumulating (Flink's PurgingTrigger).
 * @example window(globalWindow(), { trigger: purging(count(3)) })
 */
export function purging(trigger: Trigger): Trigger {
  const purge = (result: TriggerResult): TriggerResult => (result === 'fire' ? 'fire-and-purge' : result);
  return {
    name: `purging(${trigger.name})`,
    onElement: (timestamp, window, ctx) => purge(trigger.onElement(timestamp, window, ctx)),
    onEventTime: (time, window, ctx) => purge(trigger.onEventTime(time, window, ctx)),
    onProcessingTime: (time, window, ctx) => purge(trigger.onProcessingTime(time, window, ctx)),
    onMerge: trigger.onMerge?.bind(trigger),
    clear: (window, ctx) => trigger.clear(window, ctx),
  };
}
