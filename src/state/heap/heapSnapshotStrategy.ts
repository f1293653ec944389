import { keyGroupOf } from '../../core/keyGroups.js';
import type { Key, KeyGroupRange, KeyedSnapshot, KeyedStatePayload, Serializer, ShapedEntries, StateMeta } from '../../core/types.js';
import { encodeKey } from '../keyCodec.js';
import { putRow, shapeOf } from '../shapedEntries.js';
import { SnapshotChunker, wholePayload } from '../snapshotChunker.js';
import { metaOf } from '../stateChecks.js';
import { compactSources, type PendingSource, type PendingState } from './pendingState.js';
import type { StateFamily } from './stateFamily.js';
import type { Overlay, StateTable } from './stateTable.js';

/** A pending state as a snapshot sees it: its entries, each key once (`state` of each entry is meaningless). */
interface PendingCapture {
  readonly meta: StateMeta;
  readonly state: PendingState;
  readonly sources: readonly PendingSource[];
  readonly compact: boolean;
}

/** A table as a snapshot took it: its namespace, and the overlay that keeps its values as of the barrier. */
type CapturedTable = readonly [namespace: string, table: StateTable<unknown>, overlay: Overlay];

/**
 * Full and delta snapshots of a heap backend (Flink's HeapSnapshotStrategy). The synchronous part adds an overlay to
 * every table (copy-on-write, see `StateTable`): O(number of tables), not O(number of keys). The entries are read and
 * encoded later, piece by piece, while processing goes on.
 */
export class HeapSnapshotStrategy {
  constructor(
    private readonly maxParallelism: number,
    private readonly range: KeyGroupRange,
  ) {}

  /**
   * The snapshot of `families` and of the restored states nobody has read yet (`pending`); with `trackChanges`, it
   * can also give what changed since the previous snapshot (`materializeChangeChunks`).
   */
  snapshot(families: readonly StateFamily<unknown>[], pending: ReadonlyMap<string, PendingState>, trackChanges: boolean): KeyedSnapshot {
    const tables: CapturedTable[] = [];
    for (const family of families) {
      for (const [namespace, table] of family.tables) {
        const overlay: Overlay = new Map();
        table.overlays.push(overlay);
        tables.push([namespace, table, overlay]);
      }
    }
    // Restored state nobody has read yet is immutable until then: the snapshot can keep it as it is.
    const restored: PendingCapture[] = Array.from(pending.values(), (state) => ({ meta: state.meta, state, sources: state.sources, compact: state.compact }));
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const [, table, overlay] of tables) table.removeOverlay(overlay);
    };
    const chunks = (maxEntries: number, shaped = false): Generator<KeyedStatePayload> => this.chunks(tables, restored, maxEntries, release, shaped);
    // The tables as of the barrier (now); restored sources not compacted yet may count a key more than once.
    let entries = 0;
    for (const [, table] of tables) entries += table.live.size;
    for (const { sources } of restored) for (const { flat, namespaced } of sources) entries += flat.length / 3 + namespaced.length / 4;
    const snapshot: KeyedSnapshot = {
      release,
      materialize: () => wholePayload(stateIndexes(tables, restored).states, chunks(Infinity)),
      materializeChunks: (maxEntries) => chunks(maxEntries),
      materializeShapedChunks: (maxEntries) => chunks(maxEntries, true),
      flatChunks: true,
      entries,
    };
    if (!trackChanges) return snapshot;
    // Only registered states change: each has a family, whose serializer encodes its values.
    const serializers = new Map(families.map((family) => [family.descriptor.name, family.descriptor.serializer]));
    const changes = families.map((family) => [family.descriptor.name, family.takeChanges()!] as const);
    return { ...snapshot, materializeChangeChunks: (maxEntries) => this.changeChunks(tables, restored, serializers, changes, maxEntries, release) };
  }

  /** A delta: the value as of the snapshot of every key written since the previous one, or its removal. */
  private *changeChunks(
    tables: readonly CapturedTable[],
    pending: readonly PendingCapture[],
    serializerOf: ReadonlyMap<string, Serializer<unknown>>,
    changes: readonly (readonly [string, Map<string, Set<Key>>])[],
    maxEntries: number,
    release: () => void,
  ): Generator<KeyedStatePayload> {
    try {
      const { states } = stateIndexes(tables, pending);
      const serializers = states.map((meta) => serializerOf.get(meta.name));
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

  /**
   * The snapshot's payloads: unbucketed entries (`flat`, `flatNamespaced`) in table order (a full snapshot restores
   * whole instances, so the key groups are computed only by a reader that filters, see `forEachPayloadEntry`), at
   * most `maxEntries` a piece. Each table's keys and values are taken when its turn comes (what the snapshot sees;
   * processing goes on between pieces), and values are encoded one piece at a time, so the encoded form of the
   * whole state never exists at once. With `shaped`, the values of a table whose serializer keeps plain values as
   * they are go as rows (`shaped`, see `shapedEntries.ts`) when they have the shape of its first such value.
   */
  private *chunks(tables: readonly CapturedTable[], pending: readonly PendingCapture[], maxEntries: number, release: () => void, shaped: boolean): Generator<KeyedStatePayload> {
    try {
      const { states, tableStates, pendingStates } = stateIndexes(tables, pending);
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
      // Flat, no array per entry: state, key, value triples; with a namespace, quadruples apart. `flat` and `rows`
      // grow at their end only (`at`, `putRow`), so they stay packed arrays: made at their size with `new Array(n)`,
      // they were holey, which `JSON.stringify` reads through its slow path (a piece of 256 rows took ~42 µs to
      // stringify holey against ~28 packed, ~3 µs more to build; a third of a flat snapshot's encoding is that call).
      const pieceOf = (): unknown[] => [];
      let flat = pieceOf();
      let at = 0;
      let namespaced: unknown[] = [];
      let count = 0;
      // Rows of the table being read (`shaped`): its state, the fields of its values, the rows so far in this piece.
      let shapedList: ShapedEntries[] = [];
      let rowState = 0;
      let fields: string[] | undefined;
      let rows: unknown[] | undefined;
      let rowsAt = 0;
      const closeRows = () => {
        if (rows !== undefined && rowsAt > 0) {
          rows.length = rowsAt;
          shapedList.push({ state: rowState, fields: fields!, rows });
        }
        rows = undefined;
        rowsAt = 0;
      };
      const take = (): KeyedStatePayload => {
        closeRows();
        flat.length = at;
        const payload: KeyedStatePayload = {
          states,
          keyGroups: [],
          ...(flat.length > 0 || (namespaced.length === 0 && shapedList.length === 0) ? { flat } : {}),
          ...(namespaced.length > 0 ? { flatNamespaced: namespaced } : {}),
          ...(shapedList.length > 0 ? { shaped: shapedList } : {}),
          range,
        };
        flat = pieceOf();
        at = 0;
        namespaced = [];
        shapedList = [];
        count = 0;
        return payload;
      };
      // Puts one entry of the table being read into the piece: as a row when it has the table's shape.
      let serializer: Serializer<unknown>;
      let state = 0;
      let namespace = '';
      let shapeTries = 0;
      const put = (key: Key, value: unknown) => {
        if (fields === undefined && shapeTries > 0) {
          shapeTries--;
          fields = shapeOf(value);
        }
        if (fields !== undefined) {
          rows ??= [];
          const end = putRow(rows, rowsAt, encodeKey(key), value, fields);
          if (end >= 0) {
            rowsAt = end;
            return;
          }
          // Not of the shape: what `putRow` wrote of it goes.
          rows.length = rowsAt;
        }
        if (namespace === '') {
          flat[at++] = state;
          flat[at++] = encodeKey(key);
          flat[at++] = serializer.encode(value);
        } else namespaced.push(state, encodeKey(key), serializer.encode(value), namespace);
      };
      for (let source = 0; source < tables.length; source++) {
        const [tableNamespace, table, overlay] = tables[source]!;
        closeRows();
        namespace = tableNamespace;
        state = rowState = tableStates[source]!;
        serializer = table.descriptor.serializer;
        fields = undefined;
        // The shape is taken from the first values that have one (a few: a table of odd values stays flat).
        shapeTries = shaped && namespace === '' && serializer.plainAsIs === true ? SHAPE_TRIES : 0;
        // Each table's keys and values as of the snapshot, taken when its turn comes (see `captureAsOf`): the
        // tables are not copied all at once, and only the keys written since the barrier are looked up.
        const { keys, values, missing } = table.captureAsOf(overlay);
        if (shapeTries > 0) {
          for (let i = 0; i < keys.length; i++) {
            put(keys[i]!, values[i]);
            if (++count >= maxEntries) yield take();
          }
          for (const [key, value] of missing) {
            put(key, value);
            if (++count >= maxEntries) yield take();
          }
          continue;
        }
        // No rows: the entries go as they are, without the call per entry of `put`.
        for (let i = 0; i < keys.length; i++) {
          if (namespace === '') {
            flat[at++] = state;
            flat[at++] = encodeKey(keys[i]!);
            flat[at++] = serializer.encode(values[i]);
          } else namespaced.push(state, encodeKey(keys[i]!), serializer.encode(values[i]), namespace);
          if (++count >= maxEntries) yield take();
        }
        for (const [key, value] of missing) {
          if (namespace === '') {
            flat[at++] = state;
            flat[at++] = encodeKey(key);
            flat[at++] = serializer.encode(value);
          } else namespaced.push(state, encodeKey(key), serializer.encode(value), namespace);
          if (++count >= maxEntries) yield take();
        }
      }
      closeRows();
      for (let index = 0; index < restored.length; index++) {
        const state = pendingStates[index]!;
        const source = restored[index];
        if (source === undefined) continue;
        for (let i = 0; i < source.flat.length; i += 3) {
          flat[at++] = state;
          flat[at++] = source.flat[i + 1];
          flat[at++] = source.flat[i + 2];
          if (++count >= maxEntries) yield take();
        }
        const entries = source.namespaced;
        for (let i = 0; i < entries.length; i += 4) {
          const namespace = entries[i + 3] as string;
          if (namespace === '') {
            flat[at++] = state;
            flat[at++] = entries[i + 1];
            flat[at++] = entries[i + 2];
          } else namespaced.push(state, entries[i + 1], entries[i + 2], namespace);
          if (++count >= maxEntries) yield take();
        }
      }
      if (count > 0) yield take();
    } finally {
      release();
    }
  }
}

/** Values of a table tried for a shape before its values are written as they are (`chunks`). */
const SHAPE_TRIES = 16;

/** The payload's `states`, and the index in it of each snapshot table's state and each pending state's. */
function stateIndexes(tables: readonly CapturedTable[], pending: readonly PendingCapture[]) {
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
