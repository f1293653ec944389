import type { Serializer } from '../core/types';
import { autoSerializer, jsonSerializer, mapSerializer, superjsonSerializer } from '../state/serializers';

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
