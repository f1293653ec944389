import type { Key, Serializer } from '../../core/types';
import type { RowStore } from './rowStore';

/** Marks, in the write buffer, a key whose row is to be deleted. */
const REMOVED = Symbol('removed');

/**
 * One state's rows that hold a single value per key (value, list, reducing and aggregating state), behind a
 * write-back buffer: writes go to a `Map` of decoded values and reach LMDB in batches (`flush`, one write
 * transaction), so the processing path pays neither a transaction nor serialization per record, and reads see
 * their own writes. The previous batch is kept as a read cache until the next flush, which catches hot keys.
 * The buffer is also exactly "what changed since the last flush": the hook for incremental checkpoints.
 */
export class ValueRows<V> {
  /** Writes not yet in LMDB: the newest value of each key, or REMOVED. */
  private dirty = new Map<Key, V | typeof REMOVED>();
  /** The batch flushed last: already in LMDB, kept to answer reads of recently written keys. */
  private recent = new Map<Key, V | typeof REMOVED>();

  constructor(
    private readonly store: RowStore,
    readonly id: number,
    readonly serializer: Serializer<V>,
  ) {}

  get(key: Key): V | undefined {
    let value = this.dirty.get(key);
    if (value === undefined) value = this.recent.get(key);
    if (value !== undefined) return value === REMOVED ? undefined : value;
    const { store } = this;
    const stored = store.db.get(store.keys.begin(store.keyGroup(key), this.id).add(key).key());
    return stored === undefined ? undefined : this.serializer.decode(stored, this.serializer.version);
  }

  set(key: Key, value: V): void {
    this.dirty.set(key, value);
    this.store.wrote();
  }

  delete(key: Key): void {
    this.dirty.set(key, REMOVED);
    this.store.wrote();
  }

  /** Writes the buffered rows; call inside a write transaction (`transactionSync`). */
  flush(keyGroupOf: (key: Key) => number): void {
    if (this.dirty.size === 0) return;
    const { db, keys } = this.store;
    for (const [key, value] of this.dirty) {
      const row = keys.begin(keyGroupOf(key), this.id).add(key).key();
      if (value === REMOVED) db.remove(row);
      else db.put(row, this.serializer.encode(value));
    }
    this.recent = this.dirty;
    this.dirty = new Map();
  }

  /** Forgets the buffers, e.g. after the rows were rewritten underneath them. */
  reset(): void {
    this.dirty.clear();
    this.recent.clear();
  }
}
