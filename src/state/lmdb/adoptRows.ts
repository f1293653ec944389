import type { KeyGroupRange, StateDescriptor, StateMeta } from '../../core/types.js';
import { restoredDecoder } from '../stateChecks.js';
import { PREFIX_BYTES, readKeyPart, readNamespace, type KeyWriter } from './keyEncoding.js';
import type { MapRows } from './mapRows.js';
import type { StateDatabase } from './rowStore.js';
import { ValueRows } from './valueRows.js';

/** The LMDB keyed backend whose restored rows are adopted. */
export interface AdoptionTarget {
  readonly db: StateDatabase;
  readonly keys: KeyWriter;
  readonly range: KeyGroupRange;
}

/**
 * Rewrites the restored rows of state `id` (written as `meta`) into the form `rows` reads: a map per entry, values
 * in the current serializer version and migrated to the descriptor's schema version. Restore writes rows as the
 * checkpoint holds them; only the descriptor that registers the state later knows the form it reads.
 */
export function adoptRestoredRows(
  { db, keys, range }: AdoptionTarget,
  id: number,
  meta: StateMeta,
  rows: ValueRows<unknown> | MapRows<unknown, unknown>,
  descriptor: StateDescriptor<unknown>,
): void {
  const decode = restoredDecoder(meta, descriptor);
  db.transactionSync(() => {
    for (let keyGroup = range.start; keyGroup <= range.end; keyGroup++) {
      const writer = keys.begin(keyGroup, id);
      const groupRows = { start: Buffer.from(writer.key()), end: writer.rangeEnd() };
      const restored = Array.from(db.getRange(groupRows), ({ key, value }) => ({ key: Buffer.from(key), value }));
      for (const { key: row, value } of restored) {
        const decoded = decode(value);
        if (rows instanceof ValueRows) {
          db.put(row, rows.serializer.encode(decoded));
          continue;
        }
        const { value: userKey, next } = readKeyPart(row, PREFIX_BYTES);
        const namespace = readNamespace(row, next).value;
        db.remove(row);
        for (const [mapKey, mapValue] of decoded as Map<unknown, unknown>) {
          db.put(keys.begin(keyGroup, id).add(userKey).addNamespace(namespace).add(mapKey).key(), rows.encodeEntry(mapKey, mapValue));
        }
      }
    }
  });
}
