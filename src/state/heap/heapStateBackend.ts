import { keyGroupOf } from '../../core/keyGroups';
import type {
  Key,
  KeyGroupRange,
  KeyedSnapshot,
  KeyedStateBackend,
  KeyedStatePayload,
  StateBackend,
  StateDescriptor,
  SnapshotEntry,
  StateMeta,
} from '../../core/types';
import { copyValue } from '../copyValue';
import { decodeKey, encodeKey } from '../keyCodec';
import { mergeStateValues } from '../mergeStateValues';
import { checkRestoredMeta, checkSameRegistration, metaOf, requireKey, undeclaredState } from '../stateChecks';
import {
  HeapAggregatingState,
  HeapListState,
  HeapMapState,
  HeapReducingState,
  HeapValueState,
  type KeyScope,
} from './heapStates';
import { StateFamily } from './stateFamily';
import type { StateTable, Overlay } from './stateTable';

/**
 * Working state in JavaScript `Map`s (Flink's HashMapStateBackend): the fastest backend, bounded by the heap.
 * Snapshots are copy-on-write, so a barrier costs O(number of states), not O(number of keys).
 * @example createJob({ name: 'clicks', stateBackend: heapStateBackend() })
 */
export function heapStateBackend(): StateBackend {
  return {
    name: 'heap',
    createKeyedBackend: ({ uid, maxParallelism, keyGroupRange, onStateRegistered }) =>
      new HeapKeyedStateBackend(uid, maxParallelism, keyGroupRange, onStateRegistered),
  };
}

/** Restored entries of a state nobody has asked for yet: decoded when its descriptor is first used. */
interface PendingState {
  meta: StateMeta;
  /** `[encodedKey, encodedValue, namespace]`. */
  entries: [unknown, unknown, string][];
}

class HeapKeyedStateBackend implements KeyedStateBackend, KeyScope {
  private key: Key | undefined;
  namespace = '';
  private readonly families = new Map<string, StateFamily<unknown>>();
  /** State objects by name: a descriptor created again for the same state gets the same object. */
  private readonly states = new Map<string, unknown>();
  private readonly pending = new Map<string, PendingState>();

  constructor(
    private readonly uid: string,
    private readonly maxParallelism: number,
    private readonly range: KeyGroupRange,
    private readonly onStateRegistered: ((descriptor: StateDescriptor<unknown>) => void) | undefined,
  ) {}

  setCurrentKey(key: Key): void {
    this.key = key;
  }

  getCurrentKey(): Key | undefined {
    return this.key;
  }

  setCurrentNamespace(namespace: string): void {
    this.namespace = namespace;
  }

  currentKey(stateName: string): Key {
    return this.key ?? requireKey(undefined, stateName);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  getState<S>(descriptor: StateDescriptor<S, any>): S {
    const known = this.states.get(descriptor.name);
    if (known !== undefined) {
      const family = this.families.get(descriptor.name)!;
      if (family.descriptor !== descriptor) checkSameRegistration(this.uid, family.descriptor, descriptor as StateDescriptor<unknown>);
      return known as S;
    }
    const family = this.register(descriptor as StateDescriptor<unknown>);
    const state = this.createState(family);
    this.states.set(descriptor.name, state);
    return state as S;
  }

  private createState(family: StateFamily<unknown>): unknown {
    switch (family.descriptor.kind) {
      case 'value':
        return new HeapValueState(this, family);
      case 'list':
        return new HeapListState(this, family as StateFamily<unknown[]>);
      case 'map':
        return new HeapMapState(this, family as StateFamily<Map<unknown, unknown>>);
      case 'reducing':
        return new HeapReducingState(this, family);
      case 'aggregating':
        return new HeapAggregatingState(this, family);
    }
  }

  private register(descriptor: StateDescriptor<unknown>): StateFamily<unknown> {
    const existing = this.families.get(descriptor.name);
    if (existing !== undefined) {
      checkSameRegistration(this.uid, existing.descriptor, descriptor);
      return existing;
    }
    this.onStateRegistered?.(descriptor);
    const family = new StateFamily<unknown>(descriptor);
    // Registered only once the restored entries loaded: a descriptor that does not fit them must not take the name
    // (and silently drop the restored state) for the next getState.
    const restored = this.pending.get(descriptor.name);
    if (restored !== undefined) {
      this.load(family, restored);
      this.pending.delete(descriptor.name);
    }
    this.families.set(descriptor.name, family);
    return family;
  }

  private load(family: StateFamily<unknown>, restored: PendingState): void {
    const { meta } = restored;
    const descriptor = family.descriptor;
    checkRestoredMeta(this.uid, meta, descriptor);
    for (const [key, value, namespace] of restored.entries) {
      family.write(namespace).live.set(decodeKey(key), descriptor.serializer.decode(value, meta.serializerVersion));
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  mergeNamespaces(descriptor: StateDescriptor<unknown, any>, target: string, sources: readonly string[]): void {
    const family = this.register(descriptor);
    const key = this.currentKey(descriptor.name);
    let merged = family.read(target).get(key);
    for (const source of sources) {
      const table = family.read(source);
      const value = table.get(key);
      if (value === undefined) continue;
      merged = merged === undefined ? value : mergeStateValues(descriptor, merged, value);
      table.delete(key);
      family.release(source, table);
    }
    if (merged !== undefined) family.write(target).set(key, merged);
  }

  snapshot(): KeyedSnapshot {
    const tables: [string, StateTable<unknown>, Overlay][] = [];
    for (const family of this.families.values()) {
      for (const [namespace, table] of family.tables) {
        const overlay: Overlay = new Map();
        table.overlays.push(overlay);
        tables.push([namespace, table, overlay]);
      }
    }
    // Restored state nobody has read yet is immutable until then: the snapshot can keep it as it is.
    const pending = Array.from(this.pending.values());
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const [, table, overlay] of tables) table.overlays.splice(table.overlays.indexOf(overlay), 1);
    };
    return {
      release,
      materialize: () => {
        const states: StateMeta[] = [];
        const indexOf = new Map<string, number>();
        const groups = new Map<number, SnapshotEntry[]>();
        const groupOf = (key: Key) => {
          const keyGroup = keyGroupOf(key, this.maxParallelism);
          let group = groups.get(keyGroup);
          if (group === undefined) groups.set(keyGroup, (group = []));
          return group;
        };
        for (const [namespace, table, overlay] of tables) {
          const { name, serializer } = table.descriptor;
          let index = indexOf.get(name);
          if (index === undefined) indexOf.set(name, (index = states.push(metaOf(table.descriptor)) - 1));
          const state = index;
          if (namespace === '') table.forEachAsOf(overlay, (key, value) => groupOf(key).push([state, encodeKey(key), serializer.encode(value)]));
          else table.forEachAsOf(overlay, (key, value) => groupOf(key).push([state, encodeKey(key), serializer.encode(value), namespace]));
        }
        for (const { meta, entries } of pending) {
          const index = states.push(meta) - 1;
          for (const [key, value, namespace] of entries) {
            groupOf(decodeKey(key)).push(namespace === '' ? [index, key, value] : [index, key, value, namespace]);
          }
        }
        release();
        return { states, keyGroups: Array.from(groups).sort((a, b) => a[0] - b[0]) };
      },
    };
  }

  restore(payloads: KeyedStatePayload[]): void {
    for (const payload of payloads) {
      for (const [keyGroup, entries] of payload.keyGroups) {
        if (keyGroup < this.range.start || keyGroup > this.range.end) continue;
        for (const [index, key, value, namespace = ''] of entries) {
          const meta = payload.states[index];
          if (meta === undefined) throw undeclaredState(this.uid, index);
          let state = this.pending.get(meta.name);
          if (state === undefined) this.pending.set(meta.name, (state = { meta, entries: [] }));
          state.entries.push([key, value, namespace]);
        }
      }
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  keysOf(descriptor: StateDescriptor<unknown, any>, namespace = ''): Iterable<Key> {
    return this.register(descriptor).read(namespace).live.keys();
  }

  peek<STORED>(descriptor: StateDescriptor<unknown, STORED>, key: Key, namespace = ''): STORED | undefined {
    const value = this.register(descriptor as StateDescriptor<unknown>).read(namespace).get(key);
    // The live value is mutated in place by later records: the caller gets its own copy.
    return value === undefined ? undefined : (copyValue(value) as STORED);
  }

  keyCount(): number {
    const keys = new Set<unknown>();
    for (const family of this.families.values()) for (const table of family.tables.values()) for (const key of table.live.keys()) keys.add(key);
    for (const state of this.pending.values()) for (const [key] of state.entries) keys.add(decodeKey(key));
    return keys.size;
  }

  dispose(): void {
    this.families.clear();
    this.states.clear();
    this.pending.clear();
  }
}
