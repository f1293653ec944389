import type { Key, Serializer } from '../../core/types.js';
import { ChangedKeys } from './changedKeys.js';
import type { RowStore } from './rowStore.js';

/**
 * One map state's rows: one LMDB row per map entry, keyed `[key group][state id][user key][namespace][map key]`, so a
 * get or put touches one entry and a map is one contiguous range (as in Flink's RocksDB MapState). Rows are written
 * straight to LMDB (one small transaction each); map state is not on the keyed-reduce hot path. Each row holds the
 * descriptor's serializer applied to a one-entry Map, which works for any Map serializer; a snapshot merges them.
 */
export class MapRows<K, V> {
  /** With change tracking (incremental checkpoints): the user keys whose map changed since the last snapshot. */
  private readonly changes: ChangedKeys | undefined;

  constructor(
    private readonly store: RowStore,
    readonly id: number,
    readonly serializer: Serializer<Map<K, V>>,
    trackChanges = false,
  ) {
    this.changes = trackChanges ? new ChangedKeys() : undefined;
  }

  /** The user keys whose map changed since the last call, by namespace; undefined without change tracking. */
  takeChanges(): Map<string, Set<Key>> | undefined {
    return this.changes?.take();
  }

  private changed(userKey: Key, namespace: string): void {
    this.changes?.add(namespace, [userKey]);
  }

  private row(userKey: Key, mapKey: K, namespace = this.store.namespace): Buffer {
    const { store } = this;
    return store.keys.begin(store.keyGroup(userKey), this.id).add(userKey).addNamespace(namespace).add(mapKey).key();
  }

  private range(userKey: Key, namespace = this.store.namespace): { start: Buffer; end: Buffer } {
    const { store } = this;
    const writer = store.keys.begin(store.keyGroup(userKey), this.id).add(userKey).addNamespace(namespace);
    return { start: Buffer.from(writer.key()), end: writer.rangeEnd() };
  }

  /** The entry a row holds. */
  entryOf(stored: unknown): [K, V] {
    const [entry] = this.serializer.decode(stored, this.serializer.version);
    return entry!;
  }

  encodeEntry(mapKey: K, value: V): unknown {
    return this.serializer.encode(new Map([[mapKey, value]]));
  }

  get(userKey: Key, mapKey: K): V | undefined {
    const stored = this.store.db.get(this.row(userKey, mapKey));
    return stored === undefined ? undefined : this.entryOf(stored)[1];
  }

  contains(userKey: Key, mapKey: K): boolean {
    return this.store.db.doesExist(this.row(userKey, mapKey));
  }

  put(userKey: Key, mapKey: K, value: V, namespace = this.store.namespace): void {
    this.changed(userKey, namespace);
    this.store.db.putSync(this.row(userKey, mapKey, namespace), this.encodeEntry(mapKey, value));
  }

  /**
   * Writes every entry in one transaction: a map key the encoding rejects, or a value the serializer cannot
   * encode, aborts it, so a rejected `putAll` writes nothing.
   */
  putAll(userKey: Key, entries: Iterable<readonly [K, V]>, namespace = this.store.namespace): void {
    const { db } = this.store;
    db.transactionSync(() => {
      for (const [mapKey, value] of entries) db.put(this.row(userKey, mapKey, namespace), this.encodeEntry(mapKey, value));
    });
    this.changed(userKey, namespace);
  }

  remove(userKey: Key, mapKey: K): void {
    this.changed(userKey, this.store.namespace);
    this.store.db.removeSync(this.row(userKey, mapKey));
  }

  /** Entries in map-key order (numbers by value, strings by UTF-8 bytes), like RocksDB's MapState. */
  entries(userKey: Key, namespace = this.store.namespace): [K, V][] {
    const entries: [K, V][] = [];
    for (const { value } of this.store.db.getRange(this.range(userKey, namespace))) entries.push(this.entryOf(value));
    return entries;
  }

  isEmpty(userKey: Key): boolean {
    for (const _ of this.store.db.getKeys({ ...this.range(userKey), limit: 1 })) return false;
    return true;
  }

  clear(userKey: Key, namespace = this.store.namespace): void {
    const { db } = this.store;
    this.changed(userKey, namespace);
    const rows = Array.from(db.getKeys(this.range(userKey, namespace)), (row) => Buffer.from(row));
    if (rows.length > 0) {
      db.transactionSync(() => {
        for (const row of rows) db.remove(row);
      });
    }
  }
}
