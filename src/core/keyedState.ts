// Keyed state as a job declares and uses it: kinds, descriptors, TTL, and the state primitives (Flink's ValueState & co.).
import type { Serializer } from './serializer.js';

export type StateKind = 'value' | 'list' | 'map' | 'reducing' | 'aggregating';

/** Flink's AggregateFunction: an accumulator built incrementally, read through `getResult`. */
export interface AggregateFunction<IN, ACC, OUT> {
  createAccumulator(): ACC;
  add(value: IN, accumulator: ACC): ACC;
  getResult(accumulator: ACC): OUT;
  merge(a: ACC, b: ACC): ACC;
}

/**
 * Names a piece of keyed state and says how to build, default and serialize it: one shape per kind (`kind` tells
 * them apart), so a reducing state always carries its `reduce` and an aggregating one its `aggregate`. Create with
 * `valueState()` & co.
 * @example const seen: StateDescriptor<ValueState<number>, number> = valueState<number>('seen', { default: 0 });
 */
export type StateDescriptor<S, STORED = unknown> =
  | ValueStateDescriptor<S, STORED>
  | ListStateDescriptor<S, STORED>
  | MapStateDescriptor<S, STORED>
  | ReducingStateDescriptor<S, STORED>
  | AggregatingStateDescriptor<S, STORED>;

/** What the descriptors of every kind carry. */
export interface StateDescriptorBase<S, STORED> {
  readonly name: string;
  readonly kind: StateKind;
  readonly serializer: Serializer<STORED>;
  /** Name under which `running.query` and the queryable state server read this state; unique within a job. */
  readonly queryable?: string;
  /** Version of the stored values' schema (1 when absent), recorded with the state; see `migrate`. */
  readonly version?: number;
  /**
   * Turns a value saved under an older `version` into the current form, when restored state is first used. Applied
   * to each element of a list state, each value of a map state, and the value (or accumulator) of the other kinds.
   */
  readonly migrate?: (value: unknown, fromVersion: number) => unknown;
  /** Time-to-live: values (list and map entries each) expire this long after their last access; see `StateTtlConfig`. */
  readonly ttl?: StateTtlConfig;
  /** Phantom field carrying the state object's type; never set. */
  readonly __state?: S;
}

/** A single value per key (`valueState()`). */
export interface ValueStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'value';
  /** Value read for a key that holds none; copied per read, never shared between keys. */
  readonly defaultValue?: STORED;
  /**
   * True when values read from the state are never changed in place, only replaced through `update` (Flink: an
   * immutable type, whose serializer's `copy` is the identity). A read while a snapshot still holds the value then
   * hands out the value itself instead of a private copy. Set it with `valueState(name, { immutable: true })`.
   */
  readonly immutable?: boolean;
}

/** A list of elements per key (`listState()`). */
export interface ListStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'list';
}

/** A map per key (`mapState()`). */
export interface MapStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'map';
}

/** Values folded into one as they are added (`reducingState()`). */
export interface ReducingStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'reducing';
  readonly reduce: (a: STORED, b: STORED) => STORED;
}

/** Values added into an accumulator (`aggregatingState()`). */
export interface AggregatingStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'aggregating';
  readonly aggregate: AggregateFunction<unknown, STORED, unknown>;
}

/**
 * A state descriptor of any kind and stored type, as in a list of the states an operator declares.
 * @example const declared: AnyStateDescriptor[] = [valueState<number>('count'), mapState<string, Date>('pages')];
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type: the list mixes kinds
export type AnyStateDescriptor = StateDescriptor<unknown, any>;

/**
 * State time-to-live (Flink's StateTtlConfig). A value expires once `lastAccess + ttl <= now`; value, reducing and
 * aggregating state expire as a whole, list and map state per element and per entry.
 */
export interface StateTtlConfig {
  /** How long a value lives after its last access, in ms of `timeCharacteristic` time (> 0). */
  readonly ttl: number;
  /** Which accesses restart the clock: writes only (default), or reads too. */
  readonly update?: 'on-create-and-write' | 'on-read-and-write';
  /** Whether an expired value still in state may be read once more (it is removed by that read), or never (default). */
  readonly visibility?: 'never-return-expired' | 'return-expired-if-not-cleaned-up';
  /**
   * Expired values are always dropped when read. Besides: `fullSnapshot` leaves them out of every snapshot written;
   * `incremental: n` checks `n` more keys of the state for expired values on each access of it.
   */
  readonly cleanup?: { readonly fullSnapshot?: boolean; readonly incremental?: number };
  /**
   * Whose time: the job's clock (`'processing-time'`, default, as in Flink), or the operator's current watermark
   * (`'event-time'`, which Flink lacks; before the first watermark, the timestamp of the record being processed).
   */
  readonly timeCharacteristic?: 'processing-time' | 'event-time';
}

/** Time as keyed state sees it, for TTL: given to a keyed backend by the job (`KeyedBackendOptions.clock`). */
export interface StateClock {
  /** The job's processing time: its scheduler's `now()`. */
  processingTime(): number;
  /** The operator's event time: its current watermark. */
  eventTime(): number;
}

export interface ValueState<T> {
  /** The key's value, the descriptor's default (a fresh copy) when it holds none, else `undefined`. */
  value(): T | undefined;
  /** Sets the key's value; `update(undefined)` clears it. */
  update(value: T | undefined): void;
  clear(): void;
}

export interface ListState<T> {
  /** The key's elements (a copy); an empty array when it holds none. */
  get(): T[];
  add(value: T): void;
  addAll(values: Iterable<T>): void;
  /** Replaces all elements; an empty list clears. */
  update(values: Iterable<T>): void;
  clear(): void;
}

export interface MapState<K, V> {
  get(key: K): V | undefined;
  put(key: K, value: V): void;
  putAll(entries: Iterable<readonly [K, V]> | Map<K, V>): void;
  remove(key: K): void;
  contains(key: K): boolean;
  entries(): [K, V][];
  keys(): K[];
  values(): V[];
  isEmpty(): boolean;
  clear(): void;
}

export interface ReducingState<T> {
  /** The reduction of everything added, or `undefined` when nothing was added. */
  get(): T | undefined;
  add(value: T): void;
  clear(): void;
}

export interface AggregatingState<IN, OUT> {
  /** `getResult` of the accumulator, or `undefined` when nothing was added. */
  get(): OUT | undefined;
  add(value: IN): void;
  clear(): void;
}
