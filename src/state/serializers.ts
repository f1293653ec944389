import superjson from 'superjson';
import { StateSerializationError } from '../core/errors.js';
import type { Serializer } from '../core/types.js';
import { ASIDE, SetAsideValue, setAside } from './setAsideValues.js';

/** superjson's form of a value; what superjson refuses (`__proto__`, `constructor`, `prototype` keys) is a typed error. */
function serializeRich(value: unknown): ReturnType<typeof superjson.serialize> {
  try {
    return superjson.serialize(value);
  } catch (error) {
    throw new StateSerializationError(
      `a state value cannot be serialized with superjson: ${String((error as Error)?.message ?? error)}; ` +
        "keep '__proto__', 'constructor' and 'prototype' keys out of state values, or give the state descriptor a serializer of its own",
      { cause: error },
    );
  }
}

/** Plain JSON: the fastest choice for values made only of objects, arrays, strings, finite numbers, booleans, null. */
export function jsonSerializer<T>(): Serializer<T> {
  return { id: 'json', version: 1, plainAsIs: true, encode: (value) => value, decode: (encoded) => encoded as T };
}

/** superjson: keeps Date, Map, Set, BigInt, undefined, RegExp; 9-17× slower than JSON on large maps. */
export function superjsonSerializer<T>(): Serializer<T> {
  return {
    id: 'superjson',
    version: 1,
    encode: (value) => serializeRich(value),
    decode: (encoded) => superjson.deserialize<T>(encoded as Parameters<typeof superjson.deserialize>[0]),
  };
}

/** The key that wraps a value superjson encoded (`auto`): an object owning it is not plain. */
export const RICH = '$superjson';

/**
 * The default: values that are plain JSON are stored as they are, and only the others pay for superjson, wrapped
 * as `{ $superjson: … }` — or, in a checkpoint to a storage that keeps structured-clone values (IndexedDB), set aside
 * for the storage to clone (see `setAsideValues`). An object that happens to own a `$superjson` (or the set-aside
 * marker's) key is not plain, so decoding is unambiguous.
 */
export function autoSerializer<T>(): Serializer<T> {
  return {
    id: 'auto',
    version: 1,
    plainAsIs: true,
    encode: (value) => (isPlainJson(value, 0) ? value : (setAside(value) ?? { [RICH]: serializeRich(value) })),
    decode: (encoded) => {
      if (encoded instanceof SetAsideValue) return encoded.value as T;
      return encoded !== null && typeof encoded === 'object' && RICH in encoded
        ? superjson.deserialize<T>((encoded as Record<string, Parameters<typeof superjson.deserialize>[0]>)[RICH]!)
        : (encoded as T);
    },
  };
}

/**
 * True when `JSON.parse(JSON.stringify(value))` gives back an equal value. Deep values are handed to superjson.
 * A full snapshot runs this over every value just before stringifying it, and with large state each value is a
 * cache miss: string members (most of a state's leaves) are taken without a call, and `-0` is told by its
 * reciprocal instead of `Object.is` (the walk over 250k `{ key, n }` values of a 1M-key heap, a subtask's share,
 * took 67–82 ms instead of 93–105, alternating in one process).
 */
function isPlainJson(value: unknown, depth: number): boolean {
  if (typeof value !== 'object') {
    return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value) && (value !== 0 || 1 / value > 0));
  }
  if (value === null) return true;
  if (depth > 32) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item !== 'string' && !isPlainJson(item, depth + 1)) return false;
    }
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key in value) {
    if (key === RICH || key === ASIDE || key === '__proto__') return false;
    const item = (value as Record<string, unknown>)[key];
    if (typeof item !== 'string' && !isPlainJson(item, depth + 1)) return false;
  }
  return true;
}

/** A Map as an array of `[key, value]` entries, each encoded by its own serializer (both `auto` by default). */
export function mapSerializer<K, V>(
  keys: Serializer<K> = autoSerializer<K>(),
  values: Serializer<V> = autoSerializer<V>(),
): Serializer<Map<K, V>> {
  return {
    id: `map(${keys.id},${values.id})`,
    version: 1,
    encode: (map) => Array.from(map, ([key, value]) => [keys.encode(key), values.encode(value)]),
    decode: (encoded, version) =>
      new Map((encoded as [unknown, unknown][]).map(([key, value]) => [keys.decode(key, version), values.decode(value, version)])),
  };
}
