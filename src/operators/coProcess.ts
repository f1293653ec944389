import { SideOutputElement } from '../core/elements.js';
import { NoKeyedContextError } from '../core/errors.js';
import { KeyedFlow, type Flow } from '../core/flow.js';
import type { KeySelector, TaskContext } from '../core/graph.js';
import type { Json, Key, KeyedStateBackend, StateDescriptor } from '../core/types.js';
import { TimerService, savedTimers, type TimeDomain } from '../time/timerService.js';
import type { ConnectedFlows } from './connect.js';
import { operateMulti, restoredStates, type MultiInputHandler } from './operateMulti.js';
import { checkStates } from './keyedOperate.js';
import type { Output, ProcessContext, ProcessOptions, TimerContext, Timers } from './process.js';

/** Flink's (Keyed)CoProcessFunction: one method per input, sharing keyed state and timers. */
export interface CoProcessFunction<A, B, R> {
  onElement1(value: A, ctx: ProcessContext, out: Output<R>): void;
  onElement2(value: B, ctx: ProcessContext, out: Output<R>): void;
  onTimer?(time: number, ctx: TimerContext, out: Output<R>): void;
}

/**
 * Processes two connected flows with one function. On keyed flows, `ctx.state` is the key's state, shared by both
 * inputs, and `ctx.timers` registers timers for the key.
 * @example
 * const seen = valueState<boolean>('seen');
 * connect(controls.pipe(keyBy((c) => c.word)), words.pipe(keyBy((w) => w))).pipe(coProcess({
 *   onElement1(_c, ctx) { ctx.state(seen).update(true); },
 *   onElement2(w, ctx, out) { if (!ctx.state(seen).value()) out.emit(w); },
 * }, { uid: 'filter-words' }))
 */
export function coProcess<A, B, R>(fn: CoProcessFunction<A, B, R>, options: Pick<ProcessOptions, 'uid' | 'states'> = {}): (connected: ConnectedFlows<A, B>) => Flow<R> {
  return (connected) => {
    const { first, second } = connected;
    const secondFlow = second as Flow<B>;
    const keySelectors =
      first instanceof KeyedFlow ? [first.keySelector as KeySelector<unknown>, (secondFlow as KeyedFlow<B>).keySelector as KeySelector<unknown>] : undefined;
    return operateMulti<R>([first as Flow<unknown>, secondFlow as Flow<unknown>], {
      kind: 'coProcess',
      uid: options.uid,
      keySelectors,
      states: checkStates('coProcess', options.states, keySelectors !== undefined),
      setup(task, emit, fail, backend) {
        const { ctx, out, service } = keyedContext<R>(task, emit, fail, backend, savedTimers(restoredStates(task)), (time) => fn.onTimer?.(time, ctx as TimerContext, out), 'coProcess');
        const handler: MultiInputHandler = {
          onRecord(input, value) {
            if (input === 0) fn.onElement1(value as A, ctx, out);
            else fn.onElement2(value as B, ctx, out);
          },
          onWatermark: (timestamp) => service?.advanceWatermark(timestamp),
          snapshotOperatorState: () => (service ? { timers: service.snapshot() } : null),
          dispose: () => service?.dispose(),
        };
        return handler;
      },
    });
  };
}

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
  const service = backend
    ? new TimerService(backend, task.scheduler, (domain, time) => {
        const previous = record.current;
        try {
          timeDomain = domain;
          record.current = time;
          onTimer(time);
        } catch (error) {
          fail(error);
        } finally {
          record.current = previous;
        }
      })
    : undefined;
  if (service && saved.length > 0) service.restore(saved, task.maxParallelism, task.keyGroupRange);
  const noKey = (): never => {
    throw new NoKeyedContextError(`operator '${task.uid}': keyed state and timers need keyed inputs; put keyBy before ${kind}`);
  };
  const key = () => backend?.getCurrentKey() ?? noKey();
  const timers: Timers = {
    registerEventTimeTimer: (time) => service ? service.registerEventTimeTimer(key() as Key, '', time) : noKey(),
    registerProcessingTimeTimer: (time) => service ? service.registerProcessingTimeTimer(key() as Key, '', time) : noKey(),
    deleteEventTimeTimer: (time) => service ? service.deleteEventTimeTimer(key() as Key, '', time) : noKey(),
    deleteProcessingTimeTimer: (time) => service ? service.deleteProcessingTimeTimer(key() as Key, '', time) : noKey(),
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
  const out: Output<R> = { emit, side: (tag, value) => emit(new SideOutputElement(tag.id, value, record.current) as never) };
  return { ctx, out, service };
}
