import type { AggregateFunction, Serializer, StateDescriptor, StateKind } from '../../core/types.js';
import { isExpired, type ResolvedTtl } from './ttlConfig.js';

/**
 * How a state with a TTL is stored in the backend under it: every value with the time of its last access (Flink's
 * TtlValue), by kind: `[value, time]` for value, reducing and aggregating state, `[element, time][]` for list state,
 * `Map<key, [value, time]>` for map state. The backend stores these like any other value, so TTL works the same on
 * every backend and its timestamps are saved and restored with the state.
 */
export type Stamped<T> = [value: T, lastAccess: number];

/**
 * A stored value as `ttlSerializer` encodes it in a snapshot: the descriptor serializer's encoding of the value (of
 * the whole list or map), then the time of last access, or for a list or map one time per element, in order.
 */
export type EncodedStamped = [encoded: unknown, lastAccess: number | number[]];

/**
 * A saved value of a state with a TTL taken apart (`EncodedStamped`), for readers of snapshots without the job; undefined
 * when it is not in that form (a damaged or foreign file).
 */
export function splitStamped(encoded: unknown): EncodedStamped | undefined {
  if (!Array.isArray(encoded) || encoded.length !== 2) return undefined;
  const lastAccess: unknown = encoded[1];
  return typeof lastAccess === 'number' || Array.isArray(lastAccess) ? (encoded as EncodedStamped) : undefined;
}

/**
 * A whole value of a state of `kind` in its stored form (`Stamped`), last accessed at `time` (each element of a list,
 * each entry of a map): what the TTL states store when it is written, for writers of state outside a job.
 */
export function stamp(kind: StateKind, value: unknown, time: number): unknown {
  switch (kind) {
    case 'list':
      return Array.from(value as Iterable<unknown>, (element): Stamped<unknown> => [element, time]);
    case 'map':
      return new Map(Array.from(value as Map<unknown, unknown>, ([key, element]): [unknown, Stamped<unknown>] => [key, [element, time]]));
    default:
      return [value, time] satisfies Stamped<unknown>;
  }
}

/** Passed to `add` of a stored reducing or aggregating state: sets the access time without adding a value. */
export const RESTAMP: unique symbol = Symbol('restamp');

/**
 * The serializer of the stored form, over the descriptor's own: the values are encoded by it (a list or map as a
 * whole, so any list or map serializer works), their times alongside, in the same order (`EncodedStamped`). It keeps
 * the id and version of the serializer it wraps: the state's `ttl` flag in its meta says which form was saved.
 */
export function ttlSerializer(inner: Serializer<unknown>, kind: StateKind): Serializer<unknown> {
  const { id, version } = inner;
  switch (kind) {
    case 'list':
      return {
        id,
        version,
        encode: (stamped) => {
          const list = stamped as Stamped<unknown>[];
          return [inner.encode(list.map(([value]) => value)), list.map(([, time]) => time)];
        },
        decode: (encoded, written) => {
          const [values, times] = encoded as [unknown, number[]];
          return (inner.decode(values, written) as unknown[]).map((value, i) => [value, times[i]!]);
        },
      };
    case 'map':
      return {
        id,
        version,
        encode: (stamped) => {
          const map = stamped as Map<unknown, Stamped<unknown>>;
          return [inner.encode(new Map(Array.from(map, ([key, [value]]) => [key, value]))), Array.from(map.values(), ([, time]) => time)];
        },
        // Map serializers keep entry order (a Map iterates in insertion order), which pairs times with entries.
        decode: (encoded, written) => {
          const [entries, times] = encoded as [unknown, number[]];
          return new Map(Array.from(inner.decode(entries, written) as Map<unknown, unknown>, ([key, value], i) => [key, [value, times[i]!]]));
        },
      };
    default:
      return {
        id,
        version,
        encode: (stamped) => [inner.encode((stamped as Stamped<unknown>)[0]), (stamped as Stamped<unknown>)[1]],
        decode: (encoded, written) => [inner.decode((encoded as [unknown, number])[0], written), (encoded as [unknown, number])[1]],
      };
  }
}

/**
 * The descriptor the backend under a TTL state registers: same name, kind and schema version, the stored form's
 * serializer, no default (the TTL state applies it), and reduce/aggregate/migrate functions over stamped values.
 * An expired value takes no part in a reduction or merge, as with Flink's TTL reducing and aggregating states.
 */
export function storedDescriptor(descriptor: StateDescriptor<unknown>, config: ResolvedTtl, now: () => number): StateDescriptor<unknown> {
  const { name, kind, version, queryable, ttl, migrate } = descriptor;
  const live = (stamped: Stamped<unknown>, time: number) => !isExpired(stamped[1], config, time);
  const common = {
    name,
    version,
    queryable,
    ttl,
    serializer: ttlSerializer(descriptor.serializer, kind),
    ...(migrate === undefined
      ? {}
      : { migrate: (value: unknown, from: number) => [migrate((value as Stamped<unknown>)[0], from), (value as Stamped<unknown>)[1]] }),
  };
  switch (descriptor.kind) {
    case 'reducing': {
      const { reduce } = descriptor;
      return {
        ...common,
        kind: 'reducing',
        reduce: (a, b) => {
          const [x, y] = [a as Stamped<unknown>, b as Stamped<unknown> | typeof RESTAMP];
          const time = now();
          if (y === RESTAMP) return [x[0], time];
          if (!live(x, time)) return y;
          if (!live(y, time)) return x;
          return [reduce(x[0], y[0]), Math.max(x[1], y[1])];
        },
      };
    }
    case 'aggregating':
      return { ...common, kind: 'aggregating', aggregate: stampedAggregate(descriptor.aggregate, live, now) };
    case 'value':
    case 'list':
    case 'map':
      return { ...common, kind: descriptor.kind };
  }
}

/**
 * The aggregate function over `[accumulator, time]`: `getResult` hands back the stamped accumulator itself, so that
 * the TTL state sees its time and applies the real `getResult` only to a live one.
 */
function stampedAggregate(
  aggregate: AggregateFunction<unknown, unknown, unknown>,
  live: (stamped: Stamped<unknown>, time: number) => boolean,
  now: () => number,
): AggregateFunction<unknown, unknown, unknown> {
  return {
    createAccumulator: () => [aggregate.createAccumulator(), Number.MIN_SAFE_INTEGER],
    add(value, accumulator) {
      const stamped = accumulator as Stamped<unknown>;
      const time = now();
      if (value === RESTAMP) {
        stamped[1] = time;
        return stamped;
      }
      const base = stamped[1] === Number.MIN_SAFE_INTEGER || live(stamped, time) ? stamped[0] : aggregate.createAccumulator();
      // The backend handed out a copy-on-write view of the accumulator, so it may be changed in place.
      stamped[0] = aggregate.add(value, base);
      stamped[1] = time;
      return stamped;
    },
    getResult: (accumulator) => accumulator,
    merge(a, b) {
      const [x, y] = [a as Stamped<unknown>, b as Stamped<unknown>];
      const time = now();
      if (!live(x, time)) return y;
      if (!live(y, time)) return x;
      return [aggregate.merge(x[0], y[0]), Math.max(x[1], y[1])];
    },
  };
}
