import type { KeyGroupRange, KeyedStatePayload, StateMeta } from '../../core/types.js';
import { decodeKey } from '../keyCodec.js';
import { forEachPayloadEntry } from '../payloadEntries.js';
import { encodedKeyType, undeclaredState } from '../stateChecks.js';
import type { KeyWriter } from './keyEncoding.js';
import type { StateDatabase } from './rowStore.js';

/** Restored entries written per transaction. */
const RESTORE_BATCH = 65_536;

/** Where one restored state's rows go, and the types of its restored keys (checked when the state is first used). */
export interface RestoredState {
  readonly id: number;
  keyTypes?: Set<string>;
}

/** The LMDB keyed backend a restore writes into. */
export interface RestoreTarget {
  readonly uid: string;
  readonly db: StateDatabase;
  readonly keys: KeyWriter;
  readonly maxParallelism: number;
  readonly range: KeyGroupRange;
}

/**
 * Restore of an LMDB keyed backend (the part Flink's RocksDB backend gives its restore operation): each payload's
 * entries in the backend's key-group range become rows, in transactions of RESTORE_BATCH writes, and a delta's
 * removals delete rows. Rows hold the entries' stored form as it is, map state's whole Map included: the backend
 * adopts such rows when a descriptor first registers the state. `stateOf` names the state an entry's index means.
 */
export function restoreRows(target: RestoreTarget, payloads: KeyedStatePayload[], stateOf: (meta: StateMeta) => RestoredState): void {
  const { uid, db, keys, maxParallelism, range } = target;
  const batch: (() => void)[] = [];
  const write = () => {
    db.transactionSync(() => batch.forEach((put) => put()));
    batch.length = 0;
  };
  for (const payload of payloads) {
    const states = payload.states.map(stateOf);
    // Rows are keyed by key group first: every entry's is needed.
    forEachPayloadEntry(payload, { maxParallelism, range, keyGroups: true }, ([index, key, value, namespace = ''], keyGroup) => {
      const state = states[index];
      if (state === undefined) throw undeclaredState(uid, index);
      (state.keyTypes ??= new Set()).add(encodedKeyType(key));
      const row = Buffer.from(keys.begin(keyGroup, state.id).add(decodeKey(key)).addNamespace(namespace).key());
      batch.push(() => {
        db.put(row, value);
      });
      if (batch.length >= RESTORE_BATCH) write();
    });
    // A delta's removals (incremental checkpoints): restored rows are whole values, map state's too.
    for (const [keyGroup, removed] of payload.removed ?? []) {
      if (keyGroup < range.start || keyGroup > range.end) continue;
      for (const [index, key, namespace = ''] of removed) {
        const state = states[index];
        if (state === undefined) throw undeclaredState(uid, index);
        const row = Buffer.from(keys.begin(keyGroup, state.id).add(decodeKey(key)).addNamespace(namespace).key());
        batch.push(() => void db.remove(row));
        if (batch.length >= RESTORE_BATCH) write();
      }
    }
  }
  if (batch.length > 0) write();
}
