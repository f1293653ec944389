import type { Key, AnyStateDescriptor, ListState, StateDescriptor } from '../core/types.js';
import type { OperatorStateOptions } from '../state/operatorStateStore.js';
import type { TimeDomain } from '../time/timerService.js';
import type { OutputTag } from './sideOutput.js';

// The contracts of process functions: what `process`, `coProcess`, `processBroadcast`, the interval join and window
// functions hand to user code. They live apart from the operators so that windows can name them without importing
// the operators that build windows.

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
