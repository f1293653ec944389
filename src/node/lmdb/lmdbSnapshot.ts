import type { KeyedSnapshot, KeyedStatePayload, StateMeta } from '../../core/types';
import { encodeKey } from '../../state/keyCodec';
import { PREFIX_BYTES, keyGroupOfRow, readKeyPart, stateIdOfRow } from './keyEncoding';
import type { MapRows } from './mapRows';
import type { StateDatabase } from './rowStore';

/** What a snapshot must know of one state, fixed when it is taken. */
export interface SnapshotState {
  readonly id: number;
  readonly meta: StateMeta;
  /** Set for a map state stored one row per entry: its rows are merged back into one Map per user key. */
  readonly mapRows?: MapRows<unknown, unknown>;
}

type Transaction = ReturnType<StateDatabase['useReadTransaction']>;

/**
 * A snapshot of an LMDB keyed backend: an LMDB read transaction, taken after the write buffers were flushed. LMDB
 * is copy-on-write (MVCC), so the transaction keeps seeing the database as it was while processing goes on writing,
 * and taking it costs O(1). `materialize` reads it in key order, which is key-group order, so each key group is one
 * contiguous range; rows are already serializer-encoded and go into the payload without being decoded.
 */
export function lmdbSnapshot(db: StateDatabase, states: SnapshotState[], onRelease: () => void): KeyedSnapshot {
  let transaction: Transaction | undefined = db.useReadTransaction();
  const release = () => {
    if (transaction === undefined) return;
    transaction.done();
    transaction = undefined;
    onRelease();
  };
  return {
    release,
    materialize: (): KeyedStatePayload => {
      if (transaction === undefined) throw new Error('the LMDB snapshot was already released or its backend disposed; take another snapshot');
      const byId = new Map(states.map((state, index) => [state.id, { ...state, index }]));
      const keyGroups: KeyedStatePayload['keyGroups'] = [];
      let group: [number, unknown, unknown][] = [];
      let groupId = -1;
      // A map under construction: its rows are contiguous, so it is complete when a row with another prefix comes.
      let map: { prefix: string; index: number; key: unknown; rows: MapRows<unknown, unknown>; entries: Map<unknown, unknown> } | undefined;
      const endMap = () => {
        if (map !== undefined) group.push([map.index, map.key, map.rows.serializer.encode(map.entries)]);
        map = undefined;
      };
      for (const { key: row, value } of db.getRange({ transaction })) {
        const state = byId.get(stateIdOfRow(row));
        if (state === undefined) continue;
        const keyGroup = keyGroupOfRow(row);
        if (keyGroup !== groupId) {
          endMap();
          if (group.length > 0) keyGroups.push([groupId, group]);
          group = [];
          groupId = keyGroup;
        }
        const { value: userKey, next } = readKeyPart(row, PREFIX_BYTES);
        if (state.mapRows === undefined) {
          group.push([state.index, encodeKey(userKey), value]);
          continue;
        }
        const prefix = row.toString('latin1', 0, next);
        if (map?.prefix !== prefix) {
          endMap();
          map = { prefix, index: state.index, key: encodeKey(userKey), rows: state.mapRows, entries: new Map() };
        }
        const [mapKey, mapValue] = state.mapRows.entryOf(value);
        map.entries.set(mapKey, mapValue);
      }
      endMap();
      if (group.length > 0) keyGroups.push([groupId, group]);
      release();
      return { states: states.map((state) => state.meta), keyGroups };
    },
  };
}
