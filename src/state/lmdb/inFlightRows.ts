import type { Key } from '../../core/types.js';

/** Marks, in a write buffer, a key whose row is to be deleted. */
export const REMOVED = Symbol('removed');

/** Buffered writes of one namespace: the newest value of each key, or REMOVED. */
export type Buffered<V> = Map<Key, V | typeof REMOVED>;

/**
 * One flush of a value state's write buffer, handed to LMDB's write thread (`put` outside a transaction: LMDB
 * writes and commits it off the JavaScript thread). LMDB's reads see none of it until the commit, so its rows are
 * read from here until LMDB reports them committed, and a snapshot taken before that reads them from here too.
 * Its maps are never written again.
 */
export interface FlushedBatch<V> {
  /** The backend's flush number: batches commit in this order. */
  readonly flush: number;
  readonly voids: Buffered<V>;
  readonly windows: ReadonlyMap<string, Buffered<V>>;
  /**
   * Live snapshots that read this batch. While one does, reads hand out copies of its values: an accumulator changed
   * in place after the barrier must not change what the snapshot writes.
   */
  holders: number;
}

/** What `InFlightRows.lookup` gives for a row that no in-flight batch wrote: the read transaction has it. */
export const NOT_IN_FLIGHT = Symbol('not in flight');

/** An in-flight row's stored form, or undefined for a deletion; by key group, namespace and key. */
export type InFlightByKeyGroup = Map<number, Map<string, Map<Key, unknown>>>;

/**
 * A snapshot's share of one value state's rows that LMDB may not have committed when the snapshot's read
 * transaction began: the batches flushed and not yet reported committed, the one flushed at the barrier included.
 * They override the transaction's rows, so the snapshot holds every write before the barrier and none after,
 * without waiting for LMDB's write thread.
 */
export class InFlightRows {
  private released = false;

  /** `batches` newest first; `encode` gives a value's stored form (the state's serializer). */
  constructor(
    private readonly batches: readonly FlushedBatch<unknown>[],
    private readonly encode: (value: unknown) => unknown,
  ) {
    for (const batch of batches) batch.holders++;
  }

  get isEmpty(): boolean {
    return this.batches.length === 0;
  }

  /** The stored form of a row as of the snapshot; undefined when it was deleted; NOT_IN_FLIGHT when no batch wrote it. */
  lookup(namespace: string, key: Key): unknown {
    for (const batch of this.batches) {
      const value = (namespace === '' ? batch.voids : batch.windows.get(namespace))?.get(key);
      if (value !== undefined) return value === REMOVED ? undefined : this.encode(value);
    }
    return NOT_IN_FLIGHT;
  }

  /** Every in-flight row, the newest write of each, by key group (a snapshot interleaves them with its range scan). */
  byKeyGroup(keyGroupOf: (key: Key) => number): InFlightByKeyGroup {
    const groups: InFlightByKeyGroup = new Map();
    const add = (namespace: string, rows: Buffered<unknown>) => {
      for (const [key, value] of rows) {
        const group = keyGroupOf(key);
        let namespaces = groups.get(group);
        if (namespaces === undefined) groups.set(group, (namespaces = new Map<string, Map<Key, unknown>>()));
        let keys = namespaces.get(namespace);
        if (keys === undefined) namespaces.set(namespace, (keys = new Map<Key, unknown>()));
        // Newest batch first: a key already seen was written again later.
        if (!keys.has(key)) keys.set(key, value === REMOVED ? undefined : this.encode(value));
      }
    };
    for (const batch of this.batches) {
      add('', batch.voids);
      for (const [namespace, rows] of batch.windows) add(namespace, rows);
    }
    return groups;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    for (const batch of this.batches) batch.holders--;
  }
}
