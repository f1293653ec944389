import { StateDescriptorConflictError, StateMigrationError } from '../../core/errors';
import { keyGroupOf } from '../../core/keyGroups';
import type {
  Key,
  KeyGroupRange,
  KeyedSnapshot,
  KeyedStateBackend,
  KeyedStatePayload,
  StateBackend,
  StateDescriptor,
  StateMeta,
} from '../../core/types';
import { copyValue } from '../copyValue';
import { decodeKey, encodeKey } from '../keyCodec';
import {
  HeapAggregatingState,
  HeapListState,
  HeapMapState,
  HeapReducingState,
  HeapValueState,
  requireKey,
  type KeyScope,
} from './heapStates';
import { StateTable, type Overlay } from './stateTable';

/**
 * Working state in JavaScript `Map`s (Flink's HashMapStateBackend): the fastest backend, bounded by the heap.
 * Snapshots are copy-on-write, so a barrier costs O(number of states), not O(number of keys).
 * @example createJob({ name: 'clicks', stateBackend: heapStateBackend() })
 */
export function heapStateBackend(): StateBackend {
  return {
    name: 'heap',
    createKeyedBackend: ({ uid, maxParallelism, keyGroupRange }) => new HeapKeyedStateBackend(uid, maxParallelism, keyGroupRange),
  };
}

/** Restored entries of a state nobody has asked for yet: decoded when its descriptor is first used. */
interface PendingState {
  meta: StateMeta;
  entries: [unknown, unknown][];
}

class HeapKeyedStateBackend implements KeyedStateBackend, KeyScope {
  private key: Key | undefined;
  private readonly tables = new Map<string, StateTable<unknown>>();
  private readonly states = new Map<StateDescriptor<unknown>, unknown>();
  private readonly pending = new Map<string, PendingState>();

  constructor(
    private readonly uid: string,
    private readonly maxParallelism: number,
    private readonly range: KeyGroupRange,
  ) {}

  setCurrentKey(key: Key): void {
    this.key = key;
  }

  getCurrentKey(): Key | undefined {
    return this.key;
  }

  currentKey(stateName: string): Key {
    return this.key ?? requireKey(undefined, stateName);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  getState<S>(descriptor: StateDescriptor<S, any>): S {
    const known = this.states.get(descriptor as StateDescriptor<unknown>);
    if (known !== undefined) return known as S;
    const table = this.register(descriptor as StateDescriptor<unknown>);
    const state = this.createState(table);
    this.states.set(descriptor as StateDescriptor<unknown>, state);
    return state as S;
  }

  private createState(table: StateTable<unknown>): unknown {
    switch (table.descriptor.kind) {
      case 'value':
        return new HeapValueState(this, table);
      case 'list':
        return new HeapListState(this, table as StateTable<unknown[]>);
      case 'map':
        return new HeapMapState(this, table as StateTable<Map<unknown, unknown>>);
      case 'reducing':
        return new HeapReducingState(this, table);
      case 'aggregating':
        return new HeapAggregatingState(this, table);
    }
  }

  private register(descriptor: StateDescriptor<unknown>): StateTable<unknown> {
    const existing = this.tables.get(descriptor.name);
    if (existing !== undefined) {
      const was = existing.descriptor;
      if (was.kind !== descriptor.kind || was.serializer.id !== descriptor.serializer.id) {
        throw new StateDescriptorConflictError(
          `operator '${this.uid}': state '${descriptor.name}' is already registered as ${describe(was)}, ` +
            `not ${describe(descriptor)}; give the second state another name`,
        );
      }
      return existing;
    }
    const table = new StateTable<unknown>(descriptor, copyValue);
    this.tables.set(descriptor.name, table);
    const restored = this.pending.get(descriptor.name);
    if (restored !== undefined) {
      this.pending.delete(descriptor.name);
      this.load(table, restored);
    }
    return table;
  }

  private load(table: StateTable<unknown>, restored: PendingState): void {
    const { meta } = restored;
    const descriptor = table.descriptor;
    if (meta.kind !== descriptor.kind || meta.serializer !== descriptor.serializer.id) {
      throw new StateMigrationError(
        `operator '${this.uid}': state '${descriptor.name}' was saved as ${meta.kind} state with serializer '${meta.serializer}' ` +
          `but is now read as ${describe(descriptor)}; keep the old kind and serializer, or use another state name`,
      );
    }
    for (const [key, value] of restored.entries) {
      table.live.set(decodeKey(key), descriptor.serializer.decode(value, meta.serializerVersion));
    }
  }

  snapshot(): KeyedSnapshot {
    const tables = Array.from(this.tables.values());
    const overlays: Overlay[] = tables.map((table) => {
      const overlay: Overlay = new Map();
      table.overlays.push(overlay);
      return overlay;
    });
    // Restored state nobody has read yet is immutable until then: the snapshot can keep it as it is.
    const pending = Array.from(this.pending.values());
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      tables.forEach((table, i) => table.overlays.splice(table.overlays.indexOf(overlays[i]!), 1));
    };
    return {
      release,
      materialize: () => {
        const states: StateMeta[] = [];
        const groups = new Map<number, [number, unknown, unknown][]>();
        const groupOf = (key: Key) => {
          const keyGroup = keyGroupOf(key, this.maxParallelism);
          let group = groups.get(keyGroup);
          if (group === undefined) groups.set(keyGroup, (group = []));
          return group;
        };
        tables.forEach((table, i) => {
          const { name, kind, serializer } = table.descriptor;
          const index = states.push({ name, kind, serializer: serializer.id, serializerVersion: serializer.version }) - 1;
          table.forEachAsOf(overlays[i]!, (key, value) => {
            groupOf(key).push([index, encodeKey(key), serializer.encode(value)]);
          });
        });
        for (const { meta, entries } of pending) {
          const index = states.push(meta) - 1;
          for (const [key, value] of entries) groupOf(decodeKey(key)).push([index, key, value]);
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
        for (const [index, key, value] of entries) {
          const meta = payload.states[index];
          if (meta === undefined) throw new StateMigrationError(`operator '${this.uid}': a snapshot entry names state #${index}, which the snapshot does not declare`);
          let state = this.pending.get(meta.name);
          if (state === undefined) this.pending.set(meta.name, (state = { meta, entries: [] }));
          state.entries.push([key, value]);
        }
      }
    }
  }

  keyCount(): number {
    const keys = new Set<unknown>();
    for (const table of this.tables.values()) for (const key of table.live.keys()) keys.add(key);
    for (const state of this.pending.values()) for (const [key] of state.entries) keys.add(JSON.stringify(key));
    return keys.size;
  }

  dispose(): void {
    this.tables.clear();
    this.states.clear();
    this.pending.clear();
  }
}

function describe(descriptor: StateDescriptor<unknown>): string {
  return `${descriptor.kind} state with serializer '${descriptor.serializer.id}'`;
}
