import type {
  AggregateFunction,
  AggregatingState,
  AggregatingStateDescriptor,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  ReducingState,
  ReducingStateDescriptor,
  Serializer,
  StateTtlConfig,
  ValueState,
  ValueStateDescriptor,
} from '../core/types.js';
import { autoSerializer, mapSerializer } from './serializers.js';
import { checkTtl } from './ttl/ttlConfig.js';

export interface StateOptions<T> {
  /** How values are written in snapshots; `autoSerializer()` (JSON, superjson only for rich values) by default. */
  serializer?: Serializer<T>;
  /**
   * Makes the state readable from outside the job under this name: `running.query(name, key)`, and over HTTP with
   * `serveQueryableState`. Unique within a job.
   */
  queryable?: string;
  /**
   * Version of the values' schema (default 1). Raise it when the shape of stored values changes, and give `migrate`:
   * restoring state saved under a newer version than this is a `StateMigrationError`.
   */
  version?: number;
  /**
   * Turns a value saved under an older `version` into the current shape; called once per restored value when the
   * state is first used (per element for list state, per map value for map state).
   * @example valueState<{ cents: number }>('balance', { version: 2, migrate: (old, from) => (from === 1 ? { cents: (old as number) * 100 } : old) as { cents: number } })
   */
  migrate?: (value: unknown, fromVersion: number) => T extends (infer E)[] ? E : T extends Map<unknown, infer V> ? V : T;
  /**
   * Time-to-live with Flink's semantics: a value expires `ttl` ms after its last write (or read, with
   * `update: 'on-read-and-write'`); list elements and map entries expire one by one. Switching TTL on or off for
   * saved state is a `StateMigrationError`.
   * @example valueState<string>('last-login', { ttl: { ttl: 24 * 3600_000, cleanup: { fullSnapshot: true } } })
   */
  ttl?: StateTtlConfig;
}

/** The descriptor fields every state kind takes from its options. */
function common<T>(name: string, options: StateOptions<T>) {
  const { version, migrate, queryable, ttl } = options;
  if (version !== undefined && !(Number.isInteger(version) && version >= 1)) throw new TypeError(`state version must be an integer ≥ 1, got ${String(version)}`);
  checkTtl(name, ttl);
  return { queryable, version, migrate: migrate as ((value: unknown, fromVersion: number) => unknown) | undefined, ...(ttl === undefined ? {} : { ttl }) };
}

/**
 * A single value per key. `immutable: true` says its values are only ever replaced through `update`, never changed in
 * place, so a read while a checkpoint is being written needs no private copy (Flink: an immutable type).
 * @example
 * const seen = valueState<number>('seen', { default: 0 });
 * // in a process function: ctx.state(seen).update(ctx.state(seen).value()! + 1)
 */
export function valueState<T>(
  name: string,
  options: StateOptions<T> & { default?: T; immutable?: boolean } = {},
): ValueStateDescriptor<ValueState<T>, T> {
  const descriptor = { name, kind: 'value' as const, serializer: options.serializer ?? autoSerializer<T>(), defaultValue: options.default, ...common(name, options) };
  return options.immutable === true ? { ...descriptor, immutable: true } : descriptor;
}

/**
 * A list of elements per key.
 * @example const recent = listState<string>('recent');
 */
export function listState<T>(name: string, options: StateOptions<T[]> = {}): ListStateDescriptor<ListState<T>, T[]> {
  return { name, kind: 'list', serializer: options.serializer ?? autoSerializer<T[]>(), ...common(name, options) };
}

/**
 * A map per key.
 * @example const perPage = mapState<string, number>('per-page');
 */
export function mapState<K, V>(name: string, options: StateOptions<Map<K, V>> = {}): MapStateDescriptor<MapState<K, V>, Map<K, V>> {
  return { name, kind: 'map', serializer: options.serializer ?? mapSerializer<K, V>(), ...common(name, options) };
}

/**
 * Values folded into one with a reduce function as they are added.
 * @example const max = reducingState<number>('max', Math.max);
 */
export function reducingState<T>(
  name: string,
  reduce: (a: T, b: T) => T,
  options: StateOptions<T> = {},
): ReducingStateDescriptor<ReducingState<T>, T> {
  return { name, kind: 'reducing', serializer: options.serializer ?? autoSerializer<T>(), reduce, ...common(name, options) };
}

/**
 * Values added into an accumulator (Flink's AggregateFunction), read as its result.
 * @example const avg = aggregatingState('avg', { createAccumulator: () => [0, 0], add: (v, [s, n]) => [s + v, n + 1], getResult: ([s, n]) => s / n, merge: ([a, b], [c, d]) => [a + c, b + d] });
 */
export function aggregatingState<IN, ACC, OUT>(
  name: string,
  aggregate: AggregateFunction<IN, ACC, OUT>,
  options: StateOptions<ACC> = {},
): AggregatingStateDescriptor<AggregatingState<IN, OUT>, ACC> {
  return {
    name,
    kind: 'aggregating',
    serializer: options.serializer ?? autoSerializer<ACC>(),
    aggregate: aggregate,
    ...common(name, options),
  };
}
