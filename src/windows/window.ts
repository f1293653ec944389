import { JobDefinitionError } from '../core/errors.js';
import type { KeyedFlow } from '../core/flow.js';
import { requireKeyed } from '../operators/operate.js';
import { windowOperator } from './windowOperator.js';
import { WindowedFlow } from './windowedFlow.js';
import type { Trigger, WindowAssigner } from './windowTypes.js';
import { checkOptions } from '../core/checkOptions.js';

export interface WindowOptions {
  /** Replaces the assigner's default trigger (event-time or processing-time end of window; never for global). */
  trigger?: Trigger;
  /**
   * How long after a window's end (in event time) late records still update it and fire it again; later ones go to
   * `lateData()`. Default 0.
   */
  allowedLateness?: number;
}

/**
 * Groups each key's records into windows; follow it with `reduce`, `aggregate` or `process` to compute per window.
 * @example
 * clicks.pipe(assignTimestamps((c) => c.ts, { outOfOrderness: 5_000 }), keyBy((c) => c.user),
 *   window(tumbling(60_000), { allowedLateness: 10_000 }), aggregate(countClicks, { uid: 'per-minute' }))
 */
export function window<T>(assigner: WindowAssigner, options: WindowOptions = {}): (input: KeyedFlow<T>) => WindowedFlow<T> {
  checkOptions('window', options, ['trigger', 'allowedLateness']);
  return (input) => {
    const keyed = requireKeyed(input, `window(${assigner.name})`);
    const allowedLateness = options.allowedLateness ?? 0;
    if (!(Number.isFinite(allowedLateness) && allowedLateness >= 0)) {
      throw new JobDefinitionError(`window(${assigner.name}): allowedLateness must be a finite number of ms ≥ 0, got ${allowedLateness}`);
    }
    if (assigner.time === 'event-time' && !keyed.timestamped) {
      throw new JobDefinitionError(
        `window(${assigner.name}) is an event-time window, but the flow has no timestamps: put assignTimestamps(…) before keyBy, or use { time: 'processing-time' }`,
      );
    }
    const trigger = options.trigger ?? assigner.defaultTrigger();
    return new WindowedFlow<T>(keyed.graph, keyed.node, keyed.keySelector, keyed.timestamped, {
      assigner,
      trigger,
      defaultTrigger: options.trigger === undefined,
      allowedLateness,
      apply: windowOperator,
    });
  };
}
