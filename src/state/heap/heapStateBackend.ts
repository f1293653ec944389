import type { Key, KeyGroupRange, KeyedSnapshot, KeyedStateBackend, KeyedStatePayload, StateBackend, StateDescriptor } from '../../core/types.js';
import { copyValue } from '../copyValue.js';
import { decodeKey } from '../keyCodec.js';
import { mergeStateValues } from '../mergeStateValues.js';
import { requireKey } from '../stateChecks.js';
import { StateRegistry } from '../stateRegistry.js';
import { withStateTtl } from '../ttl/withStateTtl.js';
import { HeapRestoreOperation } from './heapRestoreOperation.js';
import { HeapSnapshotStrategy } from './heapSnapshotStrategy.js';
import { HeapAggregatingState, HeapListState, HeapMapState, HeapReducingState, HeapValueState, type KeyScope } from './heapStates.js';
import { compactSources, type PendingState } from './pendingState.js';
import { StateFamily } from './stateFamily.js';

/**
 * Working state in JavaScript `Map`s (Flink's HashMapStateBackend): the fastest backend, bounded by the heap.
 * Snapshots are copy-on-write, so a barrier costs O(number of states), not O(number of keys).
 * @example createJob({ name: 'clicks', stateBackend: heapStateBackend() })
 */
export function heapStateBackend(): StateBackend {
  return withStateTtl({
    name: 'heap',
    createKeyedBackend: ({ uid, maxParallelism, keyGroupRange, onStateRegistered, trackChanges }) =>
      new HeapKeyedStateBackend(uid, maxParallelism, keyGroupRange, onStateRegistered, trackChanges ?? false),
  });
}

/**
 * The working state of one keyed operator instance (Flink's HeapKeyedStateBackend): a family of tables per
 * registered state, and the restored states nobody has read yet. Snapshots are taken by `HeapSnapshotStrategy`,
 * restores done by `HeapRestoreOperation`.
 */
class HeapKeyedStateBackend implements KeyedStateBackend, KeyScope {
  private key: Key | undefined;
  namespace = '';
  private readonly families: StateRegistry<StateFamily<unknown>>;
  /** Restored states not registered yet, by name: loaded into their family when registered. */
  private readonly pending = new Map<string, PendingState>();
  private readonly snapshots: HeapSnapshotStrategy;
  private readonly restores: HeapRestoreOperation;

  constructor(
    uid: string,
    maxParallelism: number,
    range: KeyGroupRange,
    onStateRegistered: ((descriptor: StateDescriptor<unknown>) => void) | undefined,
    private readonly trackChanges: boolean,
  ) {
    this.families = new StateRegistry(uid, onStateRegistered, (descriptor) => this.createFamily(descriptor));
    this.snapshots = new HeapSnapshotStrategy(maxParallelism, range);
    this.restores = new HeapRestoreOperation(uid, maxParallelism, range);
  }

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
    return this.families.state(descriptor as StateDescriptor<unknown>, (family) => this.createState(family) as S);
  }

  private createState(family: StateFamily<unknown>): unknown {
    const { descriptor } = family;
    switch (descriptor.kind) {
      case 'value':
        return new HeapValueState(this, family, descriptor.defaultValue, descriptor.immutable !== true);
      case 'list':
        return new HeapListState(this, family as StateFamily<unknown[]>);
      case 'map':
        return new HeapMapState(this, family as StateFamily<Map<unknown, unknown>>);
      case 'reducing':
        return new HeapReducingState(this, family, descriptor.reduce);
      case 'aggregating':
        return new HeapAggregatingState(this, family, descriptor.aggregate);
    }
  }

  private createFamily(descriptor: StateDescriptor<unknown>): StateFamily<unknown> {
    const family = new StateFamily<unknown>(descriptor, this.trackChanges);
    // Taken from the pending states only once loaded: a descriptor that does not fit them must not take the name
    // (and silently drop the restored state) for the next getState.
    const restored = this.pending.get(descriptor.name);
    if (restored !== undefined) {
      this.restores.load(family, restored, this.key);
      this.pending.delete(descriptor.name);
    }
    return family;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  mergeNamespaces(descriptor: StateDescriptor<unknown, any>, target: string, sources: readonly string[]): void {
    const family = this.families.register(descriptor);
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
    return this.snapshots.snapshot([...this.families.registered()], this.pending, this.trackChanges);
  }

  restore(payloads: KeyedStatePayload[]): void {
    this.restores.restore(payloads, this.pending);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  keysOf(descriptor: StateDescriptor<unknown, any>, namespace = ''): Iterable<Key> {
    return this.families.register(descriptor).read(namespace).live.keys();
  }

  peek<STORED>(descriptor: StateDescriptor<unknown, STORED>, key: Key, namespace = ''): STORED | undefined {
    const value = this.families.register(descriptor as StateDescriptor<unknown>).read(namespace).get(key);
    // The live value is mutated in place by later records: the caller gets its own copy.
    return value === undefined ? undefined : (copyValue(value) as STORED);
  }

  keyCount(): number {
    const keys = new Set<unknown>();
    for (const family of this.families.registered()) for (const table of family.tables.values()) for (const key of table.live.keys()) keys.add(key);
    for (const state of this.pending.values()) {
      if (!state.compact) {
        state.sources = compactSources(state.sources);
        state.compact = true;
      }
      for (const { flat, namespaced } of state.sources) {
        for (let i = 1; i < flat.length; i += 3) keys.add(decodeKey(flat[i]));
        for (let i = 1; i < namespaced.length; i += 4) keys.add(decodeKey(namespaced[i]));
      }
    }
    return keys.size;
  }

  /** Live entries of every table, plus restored entries not yet read (counted from their sources, one per row). */
  stateEntries(): number {
    let entries = 0;
    for (const family of this.families.registered()) for (const table of family.tables.values()) entries += table.live.size;
    for (const state of this.pending.values()) for (const { flat, namespaced } of state.sources) entries += flat.length / 3 + namespaced.length / 4;
    return entries;
  }

  dispose(): void {
    this.families.clear();
    this.pending.clear();
  }
}
