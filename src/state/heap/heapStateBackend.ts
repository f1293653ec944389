import { keyGroupOf } from '../../core/keyGroups.js';
import type {
  Key,
  KeyGroupRange,
  KeyedSnapshot,
  KeyedStateBackend,
  KeyedStatePayload,
  StateBackend,
  StateDescriptor,
  StateMeta,
  RemovedEntry,
} from '../../core/types.js';
import { copyValue } from '../copyValue.js';
import { decodeKey, encodeKey } from '../keyCodec.js';
import { mergeStateValues } from '../mergeStateValues.js';
import { forEachPayloadEntry, unbucketedInRange } from '../payloadEntries.js';
import { SnapshotChunker, wholePayload } from '../snapshotChunker.js';
import {
  checkKeyType,
  checkRestoredMeta,
  checkSameRegistration,
  encodedKeyType,
  metaOf,
  requireKey,
  restoredDecoder,
  undeclaredState,
} from '../stateChecks.js';
import {
  HeapAggregatingState,
  HeapListState,
  HeapMapState,
  HeapReducingState,
  HeapValueState,
  type KeyScope,
} from './heapStates.js';
import { StateFamily } from './stateFamily.js';
import { withStateTtl } from '../ttl/withStateTtl.js';
import { ABSENT, type StateTable, type Overlay } from './stateTable.js';

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
 * Restored entries of a state nobody has asked for yet, kept as the payloads hold them (no map is built for them):
 * decoded straight into the state's tables when its descriptor is first used.
 */
interface PendingState {
  meta: StateMeta;
  /**
   * What each restored payload holds of the state, in restore order; a later one (a delta) replaces or removes
   * entries of the ones before. Never changed in place (a snapshot keeps the array it saw): a restore replaces it.
   */
  sources: readonly PendingSource[];
  /** Whether `sources` is one source with every key once and no removals (see `compactSources`). */
  compact: boolean;
}

/**
 * The entries and removals of one state in one payload, in this backend's key groups, keys and values as saved and
 * flat as payloads hold them (see `KeyedStatePayload.flat`): `flat` as `state, key, value` triples, `namespaced` as
 * `state, key, value, namespace` quadruples (`''` for no namespace), read in that order. The state index in them
 * is meaningless (the payload's). A payload of one state whose entries need no filtering lends its own arrays, so
 * that a restored state costs no copy and no array per entry until used.
 */
interface PendingSource {
  readonly flat: readonly unknown[];
  readonly namespaced: readonly unknown[];
  readonly removed: readonly RemovedEntry[];
}

/** A pending state as a snapshot sees it: its entries, each key once (`state` of each entry is meaningless). */
interface PendingCapture {
  readonly meta: StateMeta;
  readonly state: PendingState;
  readonly sources: readonly PendingSource[];
  readonly compact: boolean;
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
    private readonly trackChanges: boolean,
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
    const family = new StateFamily<unknown>(descriptor, this.trackChanges);
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

  /** Decodes a restored state's entries into its tables, payload by payload (removals after the entries of each). */
  private load(family: StateFamily<unknown>, restored: PendingState): void {
    const { meta } = restored;
    const descriptor = family.descriptor;
    checkRestoredMeta(this.uid, meta, descriptor);
    const decode = restoredDecoder(meta, descriptor);
    const keyTypes = new Set<string>();
    let lastType = '';
    let namespace = '';
    let live = family.write('').live;
    for (const { flat, namespaced, removed } of restored.sources) {
      if (flat.length > 0 && namespace !== '') live = family.write((namespace = '')).live;
      for (let i = 1; i < flat.length; i += 3) {
        const key = flat[i];
        const type = encodedKeyType(key);
        if (type !== lastType) keyTypes.add((lastType = type));
        live.set(decodeKey(key), decode(flat[i + 1]));
      }
      for (let i = 1; i < namespaced.length; i += 4) {
        const key = namespaced[i];
        const type = encodedKeyType(key);
        if (type !== lastType) keyTypes.add((lastType = type));
        const entryNamespace = namespaced[i + 2] as string;
        if (entryNamespace !== namespace) live = family.write((namespace = entryNamespace)).live;
        live.set(decodeKey(key), decode(namespaced[i + 1]));
      }
      for (const [, key, removedNamespace = ''] of removed) {
        const table = family.read(removedNamespace);
        if (table.live.delete(decodeKey(key))) family.release(removedNamespace, table);
      }
    }
    if (this.key !== undefined) checkKeyType(this.uid, descriptor.name, keyTypes, this.key);
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
    const pending: PendingCapture[] = Array.from(this.pending.values(), (state) => ({ meta: state.meta, state, sources: state.sources, compact: state.compact }));
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const [, table, overlay] of tables) table.removeOverlay(overlay);
    };
    const chunks = (maxEntries: number): Generator<KeyedStatePayload> => this.chunks(tables, pending, maxEntries, release);
    const snapshot: KeyedSnapshot = {
      release,
      materialize: () => wholePayload(this.stateIndexes(tables, pending).states, chunks(Infinity)),
      materializeChunks: chunks,
      flatChunks: true,
    };
    if (!this.trackChanges) return snapshot;
    const changes = Array.from(this.families.values(), (family) => [family.descriptor.name, family.takeChanges()!] as const);
    return { ...snapshot, materializeChangeChunks: (maxEntries) => this.changeChunks(tables, pending, changes, maxEntries, release) };
  }

  /** A delta: the value as of the snapshot of every key written since the previous one, or its removal. */
  private *changeChunks(
    tables: readonly [string, StateTable<unknown>, Overlay][],
    pending: readonly PendingCapture[],
    changes: readonly (readonly [string, Map<string, Set<Key>>])[],
    maxEntries: number,
    release: () => void,
  ): Generator<KeyedStatePayload> {
    try {
      const { states } = this.stateIndexes(tables, pending);
      // Only registered states change: each has a family, whose serializer encodes its values.
      const serializers = states.map((meta) => this.families.get(meta.name)?.descriptor.serializer);
      const captured = new Map(tables.map(([namespace, table, overlay]) => [`${table.descriptor.name}\u0000${namespace}`, { table, overlay }]));
      // Per key group, flat quadruples: state index, namespace, key, value (undefined: removed).
      const buckets = new Map<number, unknown[]>();
      for (const [name, byNamespace] of changes) {
        const state = states.findIndex((meta) => meta.name === name);
        for (const [namespace, keys] of byNamespace) {
          const at = captured.get(`${name}\u0000${namespace}`);
          for (const key of keys) {
            const keyGroup = keyGroupOf(key, this.maxParallelism);
            let entries = buckets.get(keyGroup);
            if (entries === undefined) buckets.set(keyGroup, (entries = []));
            entries.push(state, namespace, key, at?.table.valueAsOf(at.overlay, key));
          }
        }
      }
      const chunker = new SnapshotChunker(states, maxEntries);
      for (const keyGroup of Array.from(buckets.keys()).sort((a, b) => a - b)) {
        const entries = buckets.get(keyGroup)!;
        for (let i = 0; i < entries.length; i += 4) {
          const state = entries[i] as number;
          const namespace = entries[i + 1] as string;
          const key = encodeKey(entries[i + 2] as Key);
          const value = entries[i + 3];
          const closed =
            value === undefined
              ? chunker.remove(keyGroup, namespace === '' ? [state, key] : [state, key, namespace])
              : chunker.add(keyGroup, namespace === '' ? [state, key, serializers[state]!.encode(value)] : [state, key, serializers[state]!.encode(value), namespace]);
          if (closed) yield closed;
        }
      }
      const last = chunker.finish();
      if (last) yield last;
    } finally {
      release();
    }
  }

  /** The payload's `states`, and the index in it of each snapshot table's state and each pending state's. */
  private stateIndexes(tables: readonly [string, StateTable<unknown>, Overlay][], pending: readonly PendingCapture[]) {
    const states: StateMeta[] = [];
    const indexOf = new Map<string, number>();
    const tableStates = tables.map(([, table]) => {
      let index = indexOf.get(table.descriptor.name);
      if (index === undefined) indexOf.set(table.descriptor.name, (index = states.push(metaOf(table.descriptor)) - 1));
      return index;
    });
    const pendingStates = pending.map(({ meta }) => states.push(meta) - 1);
    return { states, tableStates, pendingStates };
  }

  /**
   * The snapshot's payloads: unbucketed entries (`flat`, `flatNamespaced`) in table order (a full snapshot restores whole instances, so the key
   * groups are computed only by a reader that filters, see `forEachPayloadEntry`), at most `maxEntries` a piece. The
   * tables are walked at once for references (what the snapshot sees; processing goes on between pieces), and
   * values are encoded one piece at a time, so the encoded form of the whole state never exists at once.
   */
  private *chunks(
    tables: readonly [string, StateTable<unknown>, Overlay][],
    pending: readonly PendingCapture[],
    maxEntries: number,
    release: () => void,
  ): Generator<KeyedStatePayload> {
    try {
      const { states, tableStates, pendingStates } = this.stateIndexes(tables, pending);
      const range: [number, number] = [this.range.start, this.range.end];
      // Restored, never read: entries as saved (see `PendingSource`).
      const restored = pending.map(({ state, sources, compact }) => {
        const compacted = compact ? sources : compactSources(sources);
        // Kept for the next snapshot, unless a restore came in between.
        if (!compact && state.sources === sources) {
          state.sources = compacted;
          state.compact = true;
        }
        return compacted[0];
      });
      // Flat, no array per entry: state, key, value triples; with a namespace, quadruples apart.
      let flat: unknown[] = [];
      let namespaced: unknown[] = [];
      let count = 0;
      const take = (): KeyedStatePayload => {
        const payload: KeyedStatePayload =
          namespaced.length === 0
            ? { states, keyGroups: [], flat, range }
            : flat.length === 0
              ? { states, keyGroups: [], flatNamespaced: namespaced, range }
              : { states, keyGroups: [], flat, flatNamespaced: namespaced, range };
        flat = [];
        namespaced = [];
        count = 0;
        return payload;
      };
      for (let source = 0; source < tables.length; source++) {
        const [namespace, table, overlay] = tables[source]!;
        const state = tableStates[source]!;
        const serializer = table.descriptor.serializer;
        // Each table's keys and values as of the snapshot, taken when its turn comes (see `captureAsOf`): the
        // tables are not copied all at once, and a key is looked up only when written since the barrier.
        const { keys, values, fix, missing } = table.captureAsOf(overlay);
        for (let i = 0; i < keys.length; i++) {
          let value: unknown = values[i];
          if (fix !== undefined) {
            const old = fix.get(keys[i]!);
            if (old === ABSENT) continue;
            if (old !== undefined) value = old;
          }
          if (namespace === '') flat.push(state, encodeKey(keys[i]!), serializer.encode(value));
          else namespaced.push(state, encodeKey(keys[i]!), serializer.encode(value), namespace);
          if (++count >= maxEntries) yield take();
        }
        for (const [key, value] of missing) {
          if (namespace === '') flat.push(state, encodeKey(key), serializer.encode(value));
          else namespaced.push(state, encodeKey(key), serializer.encode(value), namespace);
          if (++count >= maxEntries) yield take();
        }
      }
      for (let index = 0; index < restored.length; index++) {
        const state = pendingStates[index]!;
        const source = restored[index];
        if (source === undefined) continue;
        for (let i = 0; i < source.flat.length; i += 3) {
          flat.push(state, source.flat[i + 1], source.flat[i + 2]);
          if (++count >= maxEntries) yield take();
        }
        const entries = source.namespaced;
        for (let i = 0; i < entries.length; i += 4) {
          const namespace = entries[i + 3] as string;
          if (namespace === '') flat.push(state, entries[i + 1], entries[i + 2]);
          else namespaced.push(state, entries[i + 1], entries[i + 2], namespace);
          if (++count >= maxEntries) yield take();
        }
      }
      if (count > 0) yield take();
    } finally {
      release();
    }
  }

  /**
   * Keeps the entries of this backend's key groups as pending, by state: nothing is decoded (nor put in a map) until
   * a state's descriptor is first used.
   */
  restore(payloads: KeyedStatePayload[]): void {
    for (const payload of payloads) {
      const declared = payload.states.length;
      const lent = lentSource(payload, this.range, this.uid);
      const entries: unknown[][] = [];
      const removals: RemovedEntry[][] = [];
      if (lent === undefined) {
        // Copied, in the order read: quadruples (see `PendingSource`), whatever the entry's form.
        forEachPayloadEntry(payload, { maxParallelism: this.maxParallelism, range: this.range }, (entry) => {
          const index = entry[0];
          let list = entries[index];
          if (list === undefined) {
            if (!(index < declared)) throw undeclaredState(this.uid, index);
            entries[index] = list = [];
          }
          list.push(index, entry[1], entry[2], entry[3] ?? '');
        });
      }
      for (const [keyGroup, removed] of payload.removed ?? []) {
        if (keyGroup < this.range.start || keyGroup > this.range.end) continue;
        for (const entry of removed) {
          const index = entry[0];
          if (!(index < declared)) throw undeclaredState(this.uid, index);
          (removals[index] ??= []).push(entry);
        }
      }
      for (let index = 0; index < declared; index++) {
        const own = lent !== undefined && index === 0 ? lent : undefined;
        if (own === undefined && entries[index] === undefined && removals[index] === undefined) continue;
        const meta = payload.states[index]!;
        const source: PendingSource = { flat: own?.flat ?? [], namespaced: own?.namespaced ?? entries[index] ?? [], removed: removals[index] ?? [] };
        const state = this.pending.get(meta.name);
        if (state === undefined) this.pending.set(meta.name, { meta, sources: [source], compact: false });
        else {
          state.sources = [...state.sources, source];
          state.compact = false;
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

  dispose(): void {
    this.families.clear();
    this.states.clear();
    this.pending.clear();
  }
}

/**
 * The entries of a payload of one state, all unbucketed and in `range` by the payload's own range, as its own arrays
 * (checked to name that state): what `restore` keeps without copying. Undefined for any other payload, and for one
 * without such entries.
 */
function lentSource(payload: KeyedStatePayload, range: KeyGroupRange, uid: string): Pick<PendingSource, 'flat' | 'namespaced'> | undefined {
  if (payload.states.length !== 1 || unbucketedInRange(payload, range) !== 'all') return undefined;
  for (const [keyGroup, entries] of payload.keyGroups) if (entries.length > 0 && keyGroup >= range.start && keyGroup <= range.end) return undefined;
  const flat = payload.flat ?? [];
  const namespaced = payload.flatNamespaced ?? [];
  // As `forEachPayloadEntry` reads them: whole entries only.
  if (flat.length % 3 !== 0 || namespaced.length % 4 !== 0) return undefined;
  for (let i = 0; i < flat.length; i += 3) if (flat[i] !== 0) throw undeclaredState(uid, flat[i] as number);
  for (let i = 0; i < namespaced.length; i += 4) if (namespaced[i] !== 0) throw undeclaredState(uid, namespaced[i] as number);
  return flat.length === 0 && namespaced.length === 0 ? undefined : { flat, namespaced };
}

/**
 * A pending state's sources applied one after the other (entries, then removals, of each): one source holding the
 * entry of each key and namespace that remains, in first-written order, namespace by namespace (those without one
 * in `flat`).
 */
function compactSources(sources: readonly PendingSource[]): PendingSource[] {
  // By namespace and key as saved: a bigint's `{ $bigint }` by its text (keys are not decoded: a snapshot passes them on as they are).
  const byNamespace = new Map<string, Map<unknown, [key: unknown, value: unknown]>>();
  const idOf = (key: unknown) => (key !== null && typeof key === 'object' ? `\u0000object:${JSON.stringify(key)}` : key);
  const tableOf = (namespace: string) => {
    let table = byNamespace.get(namespace);
    if (table === undefined) byNamespace.set(namespace, (table = new Map<unknown, [key: unknown, value: unknown]>()));
    return table;
  };
  for (const { flat, namespaced, removed } of sources) {
    if (flat.length > 0) {
      const table = tableOf('');
      for (let i = 0; i < flat.length; i += 3) table.set(idOf(flat[i + 1]), [flat[i + 1], flat[i + 2]]);
    }
    for (let i = 0; i < namespaced.length; i += 4) tableOf(namespaced[i + 3] as string).set(idOf(namespaced[i + 1]), [namespaced[i + 1], namespaced[i + 2]]);
    for (const [, key, namespace = ''] of removed) byNamespace.get(namespace)?.delete(idOf(key));
  }
  const flat: unknown[] = [];
  const namespaced: unknown[] = [];
  for (const [namespace, table] of byNamespace) {
    if (namespace === '') for (const [key, value] of table.values()) flat.push(0, key, value);
    else for (const [key, value] of table.values()) namespaced.push(0, key, value, namespace);
  }
  return flat.length === 0 && namespaced.length === 0 ? [] : [{ flat, namespaced, removed: [] }];
}
