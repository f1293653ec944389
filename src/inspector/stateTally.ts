import type { KeyedStatePayload, StateMeta } from '../core/types.js';
import { forEachPayloadEntry } from '../state/payloadEntries.js';
import type { StateSummary } from './checkpointSummary.js';

// Counting what a state holds across a checkpoint's payloads: keys, entries, namespaces, bytes and keys per key group.

export interface StateTally {
  meta: StateMeta;
  keys: Set<unknown>;
  entries: number;
  namespaces: Set<string>;
  bytes: number;
  keyGroups: Map<number, number>;
}

export function tally(payload: KeyedStatePayload, states: Map<string, StateTally>, maxParallelism: number): void {
  const { states: metas } = payload;
  const tallies = metas.map((meta) => {
    let state = states.get(meta.name);
    if (state === undefined) {
      state = { meta, keys: new Set(), entries: 0, namespaces: new Set(), bytes: 0, keyGroups: new Map() };
      states.set(meta.name, state);
    }
    return state;
  });
  // Entries name declared states: `checkStatePayload` checked them.
  forEachPayloadEntry(payload, { maxParallelism, keyGroups: true }, ([index, key, value, namespace], keyGroup) => {
    const state = tallies[index]!;
    const encodedKey = typeof key === 'string' ? key : JSON.stringify(key);
    state.entries++;
    state.bytes += utf8Length(encodedKey) + utf8Length(JSON.stringify(value) ?? '');
    if (namespace !== undefined && namespace !== '') state.namespaces.add(namespace);
    if (!state.keys.has(encodedKey)) {
      state.keys.add(encodedKey);
      state.keyGroups.set(keyGroup, (state.keyGroups.get(keyGroup) ?? 0) + 1);
    }
  });
}

export function finish({ meta, keys, entries, namespaces, bytes, keyGroups }: StateTally): StateSummary {
  return {
    name: meta.name,
    kind: meta.kind,
    serializer: meta.serializer,
    serializerVersion: meta.serializerVersion,
    ttl: meta.ttl === true,
    keys: keys.size,
    entries,
    namespaces: namespaces.size,
    bytes,
    keyGroups: Array.from(keyGroups).sort((a, b) => a[0] - b[0]),
  };
}

export function utf8Length(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) length += code >= 0x800 && (code < 0xd800 || code > 0xdfff) ? 2 : 1;
  }
  return length;
}
