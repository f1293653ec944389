import type { Watermark } from '../core/elements.js';
import type { Flow } from '../core/flow.js';
import { KeyedFlow } from '../core/flow.js';
import { NoKeyedContextError } from '../core/errors.js';
import type { Json, StateDescriptor } from '../core/types.js';
import { OperatorStateStore } from '../state/operatorStateStore.js';
import { savedTimers } from '../time/timerService.js';
import { keyedContext } from './keyedContext.js';
import { output } from './output.js';
import type { ProcessContext, ProcessFunction, ProcessOptions, TimerContext, Timers } from './processFunction.js';
import type { ProcessWindowFunction } from '../windows/windowFunction.js';
import { WindowedFlow } from '../windows/windowedFlow.js';
import { checkParallelism, checkStates, keyedOperate } from './keyedOperate.js';
import { operate } from './operate.js';
import { checkOptions } from '../core/checkOptions.js';

/**
 * The lowest-level operator: calls `onElement` for every record with the key's state and timers at hand, and emits
 * whatever the function sends to `out`. After `keyBy` its state is per key; on other flows `ctx.state` and timers are
 * not available. After `window(…)` it takes a ProcessWindowFunction and runs once per window firing. Also exported
 * as `processElements`, which does not shadow Node's global `process` in the module that imports it.
 * @example
 * const count = valueState<number>('count', { default: 0 });
 * clicks.pipe(keyBy((c) => c.user), process({
 *   onElement(c, ctx, out) {
 *     const n = ctx.state(count).value()! + 1;
 *     ctx.state(count).update(n);
 *     if (n === 100) out.emit({ user: c.user, milestone: n });
 *   },
 * }, { uid: 'milestones' }))
 */
export function process<T, R>(fn: ProcessWindowFunction<T, R>, options?: ProcessOptions): (input: WindowedFlow<T>) => Flow<R>;
export function process<T, R>(fn: ProcessFunction<T, R>, options?: ProcessOptions): (input: Flow<T>) => Flow<R>;
export function process<T, R>(fn: ProcessFunction<T, R> | ProcessWindowFunction<T, R>, options: ProcessOptions = {}): (input: Flow<T>) => Flow<R> {
  checkOptions('process', options, ['uid', 'parallelism', 'states']);
  return (input) => {
    const states = checkStates('process', options.states, input instanceof KeyedFlow && !(input instanceof WindowedFlow));
    if (input instanceof WindowedFlow) {
      if (!('process' in fn)) throw new TypeError('process() after window(…) takes a ProcessWindowFunction: { process(key, ctx, elements, out) }');
      return input.window.apply<T, R>(input as WindowedFlow<T>, 'process', options.uid, { name: 'process', fromElements: (elements) => elements }, fn, options.parallelism);
    }
    const processFunction = fn as ProcessFunction<T, R>;
    if (input instanceof KeyedFlow) return keyedProcess(input, processFunction, { ...options, states });
    return nonKeyedProcess(input, processFunction, options);
  };
}

/**
 * `process` on a flow that is not keyed: `parallelism` instances take the records in turn, each with its own
 * operator state, which every instance snapshots as its own subtask (so a restore can redistribute it).
 */
function nonKeyedProcess<T, R>(input: Flow<T>, fn: ProcessFunction<T, R>, options: ProcessOptions): Flow<R> {
  const parallelism = checkParallelism('process', options.parallelism);
  return operate<T, R>(input, {
    kind: 'process',
    uid: options.uid,
    stateful: true,
    parallelism,
    setup(task, emit) {
      const noTimers = () => {
        throw new NoKeyedContextError(`operator '${task.uid}': timers need a keyed flow; put keyBy before process`);
      };
      const timers: Timers = {
        registerEventTimeTimer: noTimers,
        registerProcessingTimeTimer: noTimers,
        deleteEventTimeTimer: noTimers,
        deleteProcessingTimeTimer: noTimers,
        currentWatermark: () => task.watermark.current,
        currentProcessingTime: () => task.scheduler.now(),
      };
      const out = output(emit, task.record);
      const saved = task.restoredOperatorStates.map((state) => (state as { operatorState?: Json } | null)?.operatorState);
      const instances = Array.from({ length: parallelism }, (_, index) => {
        const store = new OperatorStateStore(task.uid, index, parallelism, saved);
        const ctx = processContext(task.uid, () => task.record.current, timers, store);
        return { subtask: parallelism === 1 ? task : task.subtask(index), store, ctx };
      });
      let next = 0;
      return {
        onRecord(value) {
          const instance = instances[next]!;
          next = next + 1 === parallelism ? 0 : next + 1;
          fn.onElement(value, instance.ctx, out);
        },
        onBarrier(barrier, forward) {
          instances.forEach(({ subtask, store }, index) =>
            // One barrier goes on, after the last instance captured its state.
            subtask.snapshot(barrier, () => ({ operator: { operatorState: store.snapshot() } }), index === parallelism - 1 ? forward : () => undefined),
          );
        },
      };
    },
  });
}

function keyedProcess<T, R>(input: KeyedFlow<T>, fn: ProcessFunction<T, R>, { uid, parallelism, states }: ProcessOptions): Flow<R> {
  return keyedOperate<T, R>(input, 'process', uid, (backend, emit, task, fail) => {
    const { ctx, out, service } = keyedContext<R>(task, emit, fail, backend, savedTimers(task.restoredOperatorStates), (time) => fn.onTimer?.(time, ctx as TimerContext, out), 'process');
    return {
      onRecord: (value) => fn.onElement(value, ctx, out),
      onWatermark(watermark: Watermark, forward: () => void) {
        service!.advanceWatermark(watermark.timestamp);
        forward();
      },
      snapshotOperatorState: () => ({ timers: service!.snapshot() }),
      dispose: () => service!.dispose(),
    };
  }, { parallelism, states });
}

/** The context of one instance of a process function on a flow that is not keyed, reused for every record. */
function processContext(uid: string, timestamp: () => number | undefined, timers: Timers, operatorState: OperatorStateStore): ProcessContext {
  return {
    key: undefined,
    get timestamp() {
      return timestamp();
    },
    timers,
    state<S>(descriptor: StateDescriptor<S, unknown>): S {
      throw new NoKeyedContextError(
        `operator '${uid}': state '${descriptor.name}' is keyed state, but this process function is not on a keyed flow; ` +
          'put keyBy before it, or use ctx.operatorState for state per instance',
      );
    },
    operatorState: (descriptor, options) => operatorState.getListState(descriptor, options),
  };
}
