import type { Serializer } from '../core/types';
import { autoSerializer, jsonSerializer, mapSerializer, superjsonSerializer } from '../state/serializers';

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
  return keySerializer && valueSerializer ? (mapSerializer(keySerializer, valueSerializer) as Serializer<unknown>) : undefined;
}

/** A saved value decoded, or, when it could not be, its stored form with `decoded: false`. */
export interface StoredValue {
  readonly value: unknown;
  readonly decoded: boolean;
}

/**
 * A lenient decoder for values saved under serializer `id`, for tools that show whatever a checkpoint holds: values of
 * a built-in serializer decoded (with the serializer version they were written with), those of another id or that
 * fail to decode given as stored.
 */
export function storedValueDecoder(id: string): (encoded: unknown, version: number) => StoredValue {
  const serializer = serializerById(id);
  if (serializer === undefined) return (encoded) => ({ value: encoded, decoded: false });
  return (encoded, version) => {
    try {
      return { value: serializer.decode(encoded, version), decoded: true };
    } catch {
      return { value: encoded, decoded: false };
    }
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
