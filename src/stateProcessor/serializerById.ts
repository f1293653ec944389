import type { Serializer, StateMeta } from '../core/types.js';
import { splitStamped } from '../state/ttl/ttlDescriptor.js';
import { autoSerializer, jsonSerializer, mapSerializer, superjsonSerializer } from '../state/serializers.js';

/**
 * Decoding saved state by the serializer id a snapshot names, without the job's code: the one place the State
 * Processor API (`readSavepoint`, `SavepointWriter`) and the inspector (`readCheckpointEntries`) look ids up.
 */

/**
 * The built-in serializer a snapshot names by id (`json`, `superjson`, `auto`, `map(<keys>,<values>)`), so saved
 * state can be read without the job's code; undefined for a user's own serializer id.
 */
export function serializerById(id: string): Serializer<unknown> | undefined {
  switch (id) {
    case 'json':
      return jsonSerializer();
    case 'superjson':
      return superjsonSerializer();
    case 'auto':
      return autoSerializer();
  }
  const match = /^map\((.*)\)$/.exec(id);
  if (!match) return undefined;
  const [keys, values] = splitTopLevel(match[1]!);
  const keySerializer = keys === undefined ? undefined : serializerById(keys);
  const valueSerializer = values === undefined ? undefined : serializerById(values);
  return keySerializer && valueSerializer ? (mapSerializer(keySerializer, valueSerializer)) : undefined;
}

/** A saved value decoded, or, when it could not be, its stored form with `decoded: false`. */
export interface StoredValue {
  readonly value: unknown;
  readonly decoded: boolean;
  /**
   * State with a TTL: when the value was last accessed (written, or read under `update: 'on-read-and-write'`), in ms
   * on the clock the TTL runs on (processing or event time); for a list or map one time per element, in the value's
   * order. It expires the descriptor's `ttl` ms later (a duration snapshots do not hold).
   */
  readonly lastAccess?: number | number[];
}

/**
 * A lenient decoder for values of the saved state `meta`, for tools that show whatever a checkpoint holds: values of
 * a built-in serializer decoded (with the serializer version they were written with), those of another id or that
 * fail to decode given as stored. TTL state comes back as the job sees it, its access times apart.
 */
export function storedValueDecoder(meta: StateMeta): (encoded: unknown) => StoredValue {
  const serializer = serializerById(meta.serializer);
  const decode = (encoded: unknown): StoredValue => {
    if (serializer === undefined) return { value: encoded, decoded: false };
    try {
      return { value: serializer.decode(encoded, meta.serializerVersion), decoded: true };
    } catch {
      return { value: encoded, decoded: false };
    }
  };
  if (!meta.ttl) return decode;
  // The access times sit beside the encoded value, so they are read even when the value is not.
  return (encoded) => {
    const stamped = splitStamped(encoded);
    return stamped ? { ...decode(stamped[0]), lastAccess: stamped[1] } : { value: encoded, decoded: false };
  };
}

/** `a,b` split at its one comma outside parentheses (`map(auto,map(json,auto))` nests). */
function splitTopLevel(text: string): [string | undefined, string | undefined] {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) return [text.slice(0, i), text.slice(i + 1)];
  }
  return [undefined, undefined];
}
