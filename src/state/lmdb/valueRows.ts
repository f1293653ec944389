import type { Key, Serializer } from '../../core/types.js';
import { copyValue } from '../copyValue.js';
import { ChangedKeys } from './changedKeys.js';
import { InFlightRows, REMOVED, type Buffered, type FlushedBatch } from './inFlightRows.js';
import type { RowStore } from './rowStore.js';

/**
 * One state's rows that hold a single value per key and namespace (value, list, reducing and aggregating state),
 * behind a write-back buffer: writes go to a `Map` of decoded values and reach LMDB in batches (`flush`), so the
 * processing path pays neither a transaction nor serialization per record, and reads see their own writes. A
 * flushed batch is written and committed by LMDB's write thread while processing goes on; its rows are read from
 * here until LMDB reports the commit, and the newest committed batch stays as a read cache until the next commit,
 * which catches hot keys.
 */
export class ValueRows<V> {
  /** Writes of the void namespace not yet flushed: the newest value of each key, or REMOVED. */
  private dirty: Buffered<V> = new Map();
  /** Writes to windows (namespaces other than the void one) not yet flushed, by namespace. */
  private windows = new Map<string, Buffered<V>>();
  /** Flushed batches, newest first: those LMDB has not committed yet, then the newest committed one (the read cache). */
  private flushed: FlushedBatch<V>[] = [];
  /** The newest flush LMDB reported committed. */
  private committedFlush = 0;
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
    const buffered = namespace === '' ? this.dirty.get(key) : this.windows.get(namespace)?.get(key);
    if (buffered !== undefined) return buffered === REMOVED ? undefined : buffered;
    const { flushed } = this;
    for (let i = 0; i < flushed.length; i++) {
      const batch = flushed[i]!;
      const value = (namespace === '' ? batch.voids : batch.windows.get(namespace))?.get(key);
      if (value === undefined) continue;
      if (value === REMOVED) return undefined;
      return batch.holders > 0 ? this.copyOnRead(key, value, namespace) : value;
    }
    const { store } = this;
    const stored = store.db.get(store.keys.begin(store.keyGroup(key), this.id).add(key).addNamespace(namespace).key());
    return stored === undefined ? undefined : this.serializer.decode(stored, this.serializer.version);
  }

  /**
   * A snapshot still reads `value`: the caller gets a copy, which becomes the buffered value, so that changes made
   * to it in place show in later reads (as on the heap backend) and never in the snapshot.
   */
  private copyOnRead(key: Key, value: V, namespace: string): V {
    const copy = copyValue(value);
    if (copy !== value) this.set(key, copy, namespace);
    return copy;
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

  /**
   * Hands the buffered rows to LMDB's write thread as flush number `flush`; `commits` gets the promises LMDB
   * resolves once they are committed.
   */
  flush(keyGroupOf: (key: Key) => number, flush: number, commits: Promise<boolean>[]): void {
    if (this.dirty.size === 0 && this.windows.size === 0) return;
    this.write(this.dirty, '', keyGroupOf, commits);
    for (const [namespace, buffer] of this.windows) this.write(buffer, namespace, keyGroupOf, commits);
    this.flushed.unshift({ flush, voids: this.dirty, windows: this.windows, holders: 0 });
    this.dirty = new Map();
    this.windows = new Map();
  }

  private write(buffer: Buffered<V>, namespace: string, keyGroupOf: (key: Key) => number, commits: Promise<boolean>[]): void {
    const { db, keys } = this.store;
    this.changes?.add(namespace, buffer.keys());
    let last: Promise<boolean> | undefined = commits[commits.length - 1];
    for (const [key, value] of buffer) {
      const row = keys.begin(keyGroupOf(key), this.id).add(key).addNamespace(namespace).key();
      // Outside a transaction LMDB only queues the write (key and value encoded now) for its write thread.
      const committed = value === REMOVED ? db.remove(row) : db.put(row, this.serializer.encode(value));
      // One promise per LMDB transaction: keep each once.
      if (committed !== last) commits.push((last = committed));
    }
  }

  /** LMDB committed every flush up to `flush`: their rows are read from LMDB again, but for the newest batch's. */
  committed(flush: number): void {
    this.committedFlush = flush;
    const newest = this.flushed.findIndex((batch) => batch.flush <= flush);
    if (newest >= 0) this.flushed.length = newest + 1;
  }

  /** What a snapshot taken now reads besides LMDB's read transaction: the batches not committed yet (flush first). */
  inFlight(): InFlightRows {
    const uncommitted = this.flushed.filter((batch) => batch.flush > this.committedFlush);
    return new InFlightRows(uncommitted, (value) => this.serializer.encode(value as V));
  }

  /**
   * Every key whose newest write is buffered or flushed here, by namespace: true when it left a value, false when
   * it deleted one. LMDB's rows of these keys may be older.
   */
  written(): Map<string, Map<Key, boolean>> {
    const written = new Map<string, Map<Key, boolean>>();
    const add = (namespace: string, buffer: Buffered<V>) => {
      let keys = written.get(namespace);
      if (keys === undefined) written.set(namespace, (keys = new Map<Key, boolean>()));
      for (const [key, value] of buffer) if (!keys.has(key)) keys.set(key, value !== REMOVED);
    };
    // Newest first: a key already seen was written again later.
    add('', this.dirty);
    for (const [namespace, buffer] of this.windows) add(namespace, buffer);
    for (const batch of this.flushed) {
      add('', batch.voids);
      for (const [namespace, buffer] of batch.windows) add(namespace, buffer);
    }
    return written;
  }
}
