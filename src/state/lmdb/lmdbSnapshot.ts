import type { Key, KeyedSnapshot, KeyedStatePayload, SnapshotEntry, StateMeta } from '../../core/types.js';
import { encodeKey } from '../keyCodec.js';
import { SnapshotChunker, wholePayload } from '../snapshotChunker.js';
import { NOT_IN_FLIGHT, type InFlightByKeyGroup, type InFlightRows } from './inFlightRows.js';
import { KeyWriter, PREFIX_BYTES, STRUCTURES_ROW, keyGroupOfRow, readKeyPart, readNamespace, stateIdOfRow } from './keyEncoding.js';
import type { MapRows } from './mapRows.js';
import type { StateDatabase } from './rowStore.js';

/** What a snapshot must know of one state, fixed when it is taken. */
export interface SnapshotState {
  readonly id: number;
  readonly meta: StateMeta;
  /** Set for a map state stored one row per entry: its rows are merged back into one Map per user key. */
  readonly mapRows?: MapRows<unknown, unknown>;
  /** With change tracking: the keys written since the previous snapshot, by namespace. */
  readonly changes?: Map<string, Set<Key>>;
  /** For a value state: its rows written before the snapshot that LMDB may not have committed; they win over the transaction's. */
  readonly inFlight?: InFlightRows;
}

type Transaction = ReturnType<StateDatabase['useReadTransaction']>;

/**
 * A snapshot of an LMDB keyed backend: an LMDB read transaction, taken after the write buffers were flushed, and the
 * flushed rows LMDB's write thread may not have committed yet (`inFlight`), which win over the transaction's. LMDB
 * is copy-on-write (MVCC), so the transaction keeps seeing the database as it was while processing goes on writing,
 * and taking it costs O(1). It is read in key order, which is key-group order, so each key group is one contiguous
 * range and chunks come out as the range scan goes, with each key group's in-flight rows; rows are already
 * serializer-encoded and go into the payload without being decoded (map state excepted: its per-entry rows become
 * one Map per user key and namespace).
 */
export function lmdbSnapshot(
  db: StateDatabase,
  states: SnapshotState[],
  keyGroupOf: (key: Key) => number,
  onRelease: () => void,
  trackChanges: boolean,
): KeyedSnapshot {
  let transaction: Transaction | undefined = db.useReadTransaction();
  const metas = states.map((state) => state.meta);
  const release = () => {
    if (transaction === undefined) return;
    transaction.done();
    transaction = undefined;
    for (const state of states) state.inFlight?.release();
    onRelease();
  };
  function* chunks(maxEntries: number): Generator<KeyedStatePayload> {
    if (transaction === undefined) throw new Error('the LMDB snapshot was already released or its backend disposed; take another snapshot');
    const byId = new Map(states.map((state, index) => [state.id, { ...state, index }]));
    const chunker = new SnapshotChunker(metas, maxEntries);
    // A map under construction: its rows are contiguous, so it is complete when a row with another prefix comes.
    let map: { prefix: string; keyGroup: number; entry: SnapshotEntry; rows: MapRows<unknown, unknown>; entries: Map<unknown, unknown> } | undefined;
    const endMap = () => {
      if (map === undefined) return undefined;
      const { keyGroup, entry, rows, entries } = map;
      map = undefined;
      entry[2] = rows.serializer.encode(entries);
      return chunker.add(keyGroup, entry);
    };
    try {
      // In-flight rows by state index, and the key groups they fall in, ascending: each group's go out where its
      // range starts (or where it would), and the transaction's rows they replace are skipped.
      const inFlight: (InFlightByKeyGroup | undefined)[] = states.map((state) => (state.inFlight?.isEmpty === false ? state.inFlight.byKeyGroup(keyGroupOf) : undefined));
      const inFlightGroups = [...new Set(inFlight.flatMap((groups) => (groups === undefined ? [] : [...groups.keys()])))].sort((a, b) => a - b);
      let nextInFlight = 0;
      function* inFlightUpTo(keyGroup: number): Generator<KeyedStatePayload> {
        while (nextInFlight < inFlightGroups.length && inFlightGroups[nextInFlight]! <= keyGroup) {
          const group = inFlightGroups[nextInFlight++]!;
          for (let index = 0; index < inFlight.length; index++) {
            for (const [namespace, keys] of inFlight[index]?.get(group) ?? []) {
              for (const [key, stored] of keys) {
                if (stored === undefined) continue;
                const closed = chunker.add(group, namespace === '' ? [index, encodeKey(key), stored] : [index, encodeKey(key), stored, namespace]);
                if (closed) yield closed;
              }
            }
          }
        }
      }
      for (const { key: row, value } of db.getRange({ end: STRUCTURES_ROW, transaction })) {
        const state = byId.get(stateIdOfRow(row));
        if (state === undefined) continue;
        const keyGroup = keyGroupOfRow(row);
        if (nextInFlight < inFlightGroups.length && inFlightGroups[nextInFlight]! <= keyGroup) {
          // A new key group starts here: the map under construction, if any, is complete.
          const closedMap = endMap();
          if (closedMap) yield closedMap;
          yield* inFlightUpTo(keyGroup);
        }
        const { value: userKey, next } = readKeyPart(row, PREFIX_BYTES);
        const { value: namespace, next: afterNamespace } = readNamespace(row, next);
        if (inFlight[state.index]?.get(keyGroup)?.get(namespace)?.has(userKey)) continue;
        if (state.mapRows === undefined) {
          const closedMap = endMap();
          if (closedMap) yield closedMap;
          const closed = chunker.add(keyGroup, namespace === '' ? [state.index, encodeKey(userKey), value] : [state.index, encodeKey(userKey), value, namespace]);
          if (closed) yield closed;
          continue;
        }
        const prefix = row.toString('latin1', 0, afterNamespace);
        if (map?.prefix !== prefix) {
          const closed = endMap();
          if (closed) yield closed;
          const entry: SnapshotEntry = namespace === '' ? [state.index, encodeKey(userKey), null] : [state.index, encodeKey(userKey), null, namespace];
          map = { prefix, keyGroup, entry, rows: state.mapRows, entries: new Map() };
        }
        const [mapKey, mapValue] = state.mapRows.entryOf(value);
        map.entries.set(mapKey, mapValue);
      }
      const closed = endMap();
      if (closed) yield closed;
      yield* inFlightUpTo(Infinity);
      const last = chunker.finish();
      if (last) yield last;
    } finally {
      release();
    }
  }
  const keys = new KeyWriter();
  /** A key's stored form in the read transaction: its one row, or a map's rows merged into one Map; undefined without rows. */
  function storedAsOfTransaction(state: SnapshotState, keyGroup: number, key: Key, namespace: string): unknown {
    const writer = keys.begin(keyGroup, state.id).add(key).addNamespace(namespace);
    const rows = db.getRange({ start: Buffer.from(writer.key()), end: writer.rangeEnd(), transaction });
    if (state.mapRows === undefined) {
      let value: unknown;
      for (const row of rows) value = row.value;
      return value;
    }
    const entries = new Map<unknown, unknown>();
    for (const row of rows) entries.set(...state.mapRows.entryOf(row.value));
    return entries.size > 0 ? state.mapRows.serializer.encode(entries) : undefined;
  }
  /**
   * A delta: each changed key's stored form as of the snapshot (in flight, or read back from the transaction), or its
   * removal when it has none. Changed keys are few next to the state, so they are sorted in memory.
   */
  function* changeChunks(maxEntries: number): Generator<KeyedStatePayload> {
    if (transaction === undefined) throw new Error('the LMDB snapshot was already released or its backend disposed; take another snapshot');
    try {
      const changed: { keyGroup: number; index: number; state: SnapshotState; key: Key; namespace: string }[] = [];
      states.forEach((state, index) => {
        for (const [namespace, keySet] of state.changes ?? []) {
          for (const key of keySet) changed.push({ keyGroup: keyGroupOf(key), index, state, key, namespace });
        }
      });
      changed.sort((a, b) => a.keyGroup - b.keyGroup);
      const chunker = new SnapshotChunker(metas, maxEntries);
      for (const { keyGroup, index, state, key, namespace } of changed) {
        const inFlight = state.inFlight === undefined ? NOT_IN_FLIGHT : state.inFlight.lookup(namespace, key);
        const stored = inFlight === NOT_IN_FLIGHT ? storedAsOfTransaction(state, keyGroup, key, namespace) : inFlight;
        const encodedKey = encodeKey(key);
        const closed =
          stored === undefined
            ? chunker.remove(keyGroup, namespace === '' ? [index, encodedKey] : [index, encodedKey, namespace])
            : chunker.add(keyGroup, namespace === '' ? [index, encodedKey, stored] : [index, encodedKey, stored, namespace]);
        if (closed) yield closed;
      }
      const last = chunker.finish();
      if (last) yield last;
    } finally {
      release();
    }
  }
  return {
    release,
    materialize: () => wholePayload(metas, chunks(Infinity)),
    materializeChunks: chunks,
    ...(trackChanges ? { materializeChangeChunks: changeChunks } : {}),
  };
}
