import type { Key, Serializer } from '../../core/types.js';
import { ChangedKeys } from './changedKeys.js';
import type { RowStore } from './rowStore.js';

/** Marks, in the write buffer, a key whose row is to be deleted. */
const REMOVED = Symbol('removed');

type Buffered<V> = Map<Key, V | typeof REMOVED>;

/**
 * One state's rows that hold a single value per key and namespace (value, list, reducing and aggregating state),
 * behind a write-back buffer: writes go to a `Map` of decoded values and reach LMDB in batches (`flush`, one write
 * transaction), so the processing path pays neither a transaction nor serialization per record, and reads see
 * their own writes. The void namespace's previous batch is kept as a read cache until the next flush, which catches
 * hot keys; a window's buffer is dropped once flushed, since windows come and go.
 */
export class ValueRows<V> {
  /** Writes of the void namespace not yet in LMDB: the newest value of each key, or REMOVED. */
  private dirty: Buffered<V> = new Map();
  /** The void namespace's batch flushed last: already in LMDB, kept to answer reads of recently written keys. */
  private recent: Buffered<V> = new Map();
  /** Writes to windows (namespaces other than the void one) not yet in LMDB, by namespace. */
  private windows = new Map<string, Buffered<V>>();
  /** With change tracking (incremental checkpoints): the keys flushed since the last snapshot, by namespace. */
  private readonly changes: ChangedKeys | undefined;

  constructor(
    private readonly store: RowStore,
    readonly id: number,
    readonly serializer: Serializer<V>,
    trackChanges = false,
  ) {
    this.changes = trackChanges ? new ChangedKeys() : undefined;
  }

  /** The keys written since the last call (flush first), by namespace; undefined without change tracking. */
  takeChanges(): Map<string, Set<Key>> | undefined {
    return this.changes?.take();
  }

  get(key: Key, namespace = this.store.namespace): V | undefined {
    const value = namespace === '' ? (this.dirty.get(key) ?? this.recent.get(key)) : this.windows.get(namespace)?.get(key);
    if (value !== undefined) return value === REMOVED ? undefined : value;
    const { store } = this;
    const stored = store.db.get(store.keys.begin(store.keyGroup(key), this.id).add(key).addNamespace(namespace).key());
    return stored === undefined ? undefined : this.serializer.decode(stored, this.serializer.version);
  }

  set(key: Key, value: V, namespace = this.store.namespace): void {
    this.buffer(namespace).set(key, value);
    this.store.wrote();
  }

  delete(key: Key, namespace = this.store.namespace): void {
    this.buffer(namespace).set(key, REMOVED);
    this.store.wrote();
  }

  private buffer(namespace: string): Buffered<V> {
    if (namespace === '') return this.dirty;
    let buffer = this.windows.get(namespace);
    if (buffer === undefined) this.windows.set(namespace, (buffer = new Map<Key, V | typeof REMOVED>()));
    return buffer;
  }

  /** Writes the buffered rows; call inside a write transaction (`transactionSync`). */
  flush(keyGroupOf: (key: Key) => number): void {
    if (this.dirty.size > 0) {
      this.write(this.dirty, '', keyGroupOf);
      this.recent = this.dirty;
      this.dirty = new Map();
    }
    if (this.windows.size > 0) {
      for (const [namespace, buffer] of this.windows) this.write(buffer, namespace, keyGroupOf);
      this.windows = new Map();
    }
  }

  private write(buffer: Buffered<V>, namespace: string, keyGroupOf: (key: Key) => number): void {
    const { db, keys } = this.store;
    this.changes?.add(namespace, buffer.keys());
    for (const [key, value] of buffer) {
      const row = keys.begin(keyGroupOf(key), this.id).add(key).addNamespace(namespace).key();
      if (value === REMOVED) db.remove(row);
      else db.put(row, this.serializer.encode(value));
    }
  }

  /** Forgets the buffers, e.g. after the rows were rewritten underneath them. */
  reset(): void {
    this.dirty.clear();
    this.recent.clear();
    this.windows.clear();
  }
}
