import { channel } from 'node:diagnostics_channel';
import { JOB_EVENT_TYPES, onJobEvents, type JobEvent } from '../runtime/jobEvents.js';

/**
 * The `diagnostics_channel` names weir publishes job events on, by event type: `weir:job:start`, `weir:restore`,
 * `weir:checkpoint:complete`, `weir:checkpoint:failed`, `weir:savepoint`, `weir:restart`, `weir:job:stop`. Each message
 * is the `JobEvent` (it names its job). Publishing starts when `weir/node` is imported and costs nothing on a channel
 * nobody subscribes to.
 * @example
 * import { subscribe } from 'node:diagnostics_channel';
 * import { WEIR_CHANNELS } from 'weir/node';
 * subscribe(WEIR_CHANNELS.restart, (event) => console.warn('restart', event));   // or subscribe('weir:restart', …)
 */
export const WEIR_CHANNELS = Object.fromEntries(JOB_EVENT_TYPES.map((type) => [type, `weir:${type}`])) as Readonly<Record<JobEvent['type'], string>>;

const channels = new Map(JOB_EVENT_TYPES.map((type) => [type, channel(WEIR_CHANNELS[type])]));

onJobEvents((event) => {
  const published = channels.get(event.type)!;
  if (published.hasSubscribers) published.publish(event);
});
