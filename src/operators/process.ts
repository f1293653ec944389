import { SideOutputElement, type Watermark } from '../core/elements.js';
import type { Flow } from '../core/flow.js';
import { KeyedFlow } from '../core/flow.js';
import { NoKeyedContextError } from '../core/errors.js';
import type { AnyStateDescriptor, Json, Key, ListState, StateDescriptor } from '../core/types.js';
import { OperatorStateStore, type OperatorStateOptions } from '../state/operatorStateStore.js';
import { savedTimers, type TimeDomain } from '../time/timerService.js';
import { keyedContext } from './coProcess.js';
import type { ProcessWindowFunction } from '../windows/windowFunction.js';
import { WindowedFlow } from '../windows/windowedFlow.js';
import { windowOperator } from '../windows/windowOperator.js';
import { checkParallelism, checkStates, keyedOperate } from './keyedOperate.js';
import { operate } from './operate.js';
import type { OutputTag } from './sideOutput.js';
import { checkOptions } from '../core/checkOptions.js';

/** Timers of a keyed process function, scoped to the current key (Flink's TimerService). */
export interface Timers {
  /** Fires `onTimer` once the watermark reaches `time`; one timer per key and time. */
  registerEventTimeTimer(time: number): void;
  /** Fires `onTimer` once the job's clock reaches `time`. */
  registerProcessingTimeTimer(time: number): void;
  deleteEventTimeTimer(time: number): void;
  deleteProcessingTimeTimer(time: number): void;
  currentWatermark(): number;
  currentProcessingTime(): number;
}

/** What a process function sees besides the record. */
export interface ProcessContext {
  /** The current record's (or timer's) key; undefined on a flow that is not keyed. */
  readonly key: Key | undefined;
  /** The record's event timestamp (the timer's time in `onTimer`), if the flow has timestamps. */
  readonly timestamp: number | undefined;
  /** The keyed state for a descriptor, scoped to the current key. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  state<S>(descriptor: StateDescriptor<S, any>): S;
  /**
   * This instance's operator list state (Flink's operator state), on a flow that is not keyed: saved with every
   * checkpoint and, when the job is restored at another parallelism, redistributed by `redistribution`
   * (`'even-split'` by default, or `'union'`).
   * @example const offsets = ctx.operatorState(listState<number>('buffer'), { redistribution: 'even-split' });
   */
  operatorState<T>(descriptor: StateDescriptor<ListState<T>, T[]>, options?: OperatorStateOptions): ListState<T>;
  /** Timers, on keyed flows. */
  readonly timers: Timers;
}

/** The context of `onTimer`. */
export interface TimerContext extends ProcessContext {
  readonly timeDomain: TimeDomain;
}

/** Sends records downstream, or to a side output. */
export interface Output<R> {
  emit(value: R): void;
  side<S>(tag: OutputTag<S>, value: S): void;
}

/** Flink's (Keyed)ProcessFunction: full control over each record, with keyed state and timers. */
export interface ProcessFunction<T, R> {
  onElement(value: T, ctx: ProcessContext, out: Output<R>): void;
  /** A timer registered through `ctx.timers` fired; its key is current and its output is stamped with `time`. */
  onTimer?(time: number, ctx: TimerContext, out: Output<R>): void;
}

/** Options of `process`. */
export interface ProcessOptions {
  uid?: string;
  /**
   * Parallel instances. On a keyed flow each owns a range of key groups (the job's `parallelism` by default); on
   * other flows records go to the instances in turn (round-robin), each with its own operator state (1 by default).
   */
  parallelism?: number;
  /**
   * The keyed states the function uses, registered when the operator starts, before its first record, as Flink
   * registers state in `open()` (keyed flows only). Optional, since `ctx.state` registers a state on first use; but a
   * `queryable` state listed here answers `running.query` from the start (`undefined` for a key without a value)
   * and, after a restore, with its restored values before the operator uses it again.
   */
  states?: readonly AnyStateDescriptor[];
}

/**
 * The lowest-level operator: calls `onElement` for every record with the key's state and timers at hand, and emits
 * whatever the function sends to `out`. After `keyBy` its state is per key; on other flows `ctx.state` and timers are
 * not available. After `window(…)` it takes a ProcessWindowFunction and runs once per window firing.
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
      return windowOperator<T, R>(input, 'process', options.uid, { name: 'process', fromElements: (elements) => elements }, fn as ProcessWindowFunction<unknown, R>, options.parallelism);
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
      const out = output(emit, () => task.record.current);
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

function output<R>(emit: (value: R) => void, timestamp: () => number | undefined): Output<R> {
  return { emit, side: (tag, value) => emit(new SideOutputElement(tag.id, value, timestamp()) as never) };
}
