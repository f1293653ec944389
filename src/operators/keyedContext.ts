import { NoKeyedContextError } from '../core/errors.js';
import type { TaskContext } from '../core/graph.js';
import type { Json, KeyedStateBackend, StateDescriptor } from '../core/types.js';
import { TimerService, type TimeDomain } from '../time/timerService.js';
import { UserFunctionGuard } from '../core/userFunctionFailure.js';
import type { Output, ProcessContext, TimerContext, Timers } from './processFunction.js';
import { output } from './output.js';

/**
 * The context, output and timer service of a keyed process function, shared by `process`, `coProcess` and
 * `processBroadcast`.
 * `onTimer` runs with the timer's key current and the output stamped with the timer's time.
 */
export function keyedContext<R>(
  task: TaskContext,
  emit: (value: R) => void,
  fail: (error: unknown) => void,
  backend: KeyedStateBackend | undefined,
  /** Timers saved by every instance of the operator (`savedTimers`); this instance keeps those of its key groups. */
  saved: Json[],
  onTimer: (time: number) => void,
  kind: string,
): { ctx: ProcessContext; out: Output<R>; service: TimerService | undefined } {
  const record = task.record;
  let timeDomain: TimeDomain = 'event-time';
  const guard = new UserFunctionGuard(fail);
  // Stamped with the timer's time while it runs; the record's timestamp comes back even after a throw.
  const fire = (domain: TimeDomain, time: number) => {
    const previous = record.current;
    timeDomain = domain;
    record.current = time;
    try {
      onTimer(time);
    } finally {
      record.current = previous;
    }
  };
  const service = backend ? new TimerService(backend, task.scheduler, (domain, time) => guard.call2(fire, domain, time)) : undefined;
  if (service && saved.length > 0) service.restore(saved, task.maxParallelism, task.keyGroupRange);
  const noKey = (): never => {
    throw new NoKeyedContextError(`operator '${task.uid}': keyed state and timers need keyed inputs; put keyBy before ${kind}`);
  };
  const key = () => backend?.getCurrentKey() ?? noKey();
  const timers: Timers = {
    registerEventTimeTimer: (time) => service ? service.registerEventTimeTimer(key(), '', time) : noKey(),
    registerProcessingTimeTimer: (time) => service ? service.registerProcessingTimeTimer(key(), '', time) : noKey(),
    deleteEventTimeTimer: (time) => service ? service.deleteEventTimeTimer(key(), '', time) : noKey(),
    deleteProcessingTimeTimer: (time) => service ? service.deleteProcessingTimeTimer(key(), '', time) : noKey(),
    currentWatermark: () => service?.currentWatermark ?? Number.NEGATIVE_INFINITY,
    currentProcessingTime: () => task.scheduler.now(),
  };
  const ctx: TimerContext = {
    get key() {
      return backend?.getCurrentKey();
    },
    get timestamp() {
      return record.current;
    },
    get timeDomain() {
      return timeDomain;
    },
    timers,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
    state<S>(descriptor: StateDescriptor<S, any>): S {
      return backend ? backend.getState(descriptor) : noKey();
    },
    operatorState(descriptor) {
      throw new NoKeyedContextError(
        `operator '${task.uid}': operator state '${descriptor.name}' is available to process on a flow that is not keyed; ` +
          `${kind} keeps its state per key: use ctx.state`,
      );
    },
  };
  const out = output(emit, record);
  return { ctx, out, service };
}
