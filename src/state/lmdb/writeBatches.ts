import { WeirError } from '../../core/errors.js';
import { keyGroupOf } from '../../core/keyGroups.js';
import type { Key } from '../../core/types.js';
import type { ValueRows } from './valueRows.js';

/**
 * Buffered writes past which they are written to LMDB in one transaction, by default. Large batches pay: every transaction
 * copies the B-tree pages it touches, and on a million random keys 262 144 writes per batch ran at about twice the
 * throughput of 32 768, for some 50 MB of buffered values at most (the 5M-key job still runs in a 256 MB heap).
 */
export const FLUSH_AFTER_WRITES = 262_144;

/** The LMDB keyed backend whose writes are batched: named in the write-failure error. */
export interface BatchOwner {
  readonly uid: string;
  readonly directory: string;
  readonly maxParallelism: number;
  /** Buffered writes per LMDB write transaction. */
  readonly writeBatch: number;
}

/**
 * The write batching of one LMDB keyed backend: counts the writes its value states buffer, hands them to LMDB's
 * write thread as one numbered flush once there are `writeBatch` of them (or at a snapshot), and tells the states
 * when LMDB committed a flush. A flush LMDB failed to commit fails every later flush and snapshot.
 */
export class WriteBatches {
  /** The value states whose buffers are flushed together. */
  private readonly valueRows: ValueRows<unknown>[] = [];
  private buffered = 0;
  /** Flushes handed to LMDB's write thread so far. */
  private flushes = 0;
  /**
   * Why LMDB's write thread failed to commit a flush (a full disk): every later flush and snapshot fails with it,
   * since the batch's rows never reached LMDB.
   */
  private writeFailure: unknown;
  private disposed = false;

  constructor(private readonly owner: BatchOwner) {}

  /** The value states flushed together, in registration order. */
  get rows(): readonly ValueRows<unknown>[] {
    return this.valueRows;
  }

  add(rows: ValueRows<unknown>): void {
    this.valueRows.push(rows);
  }

  /** Counts one buffered write; past the bound, flushes. */
  wrote(): void {
    if (++this.buffered >= this.owner.writeBatch) this.flush();
  }

  /**
   * Hands the buffered writes to LMDB's write thread, which writes and commits them while processing goes on: the
   * B-tree work of a batch (most of a flush's cost on random keys) leaves the JavaScript thread. Until LMDB reports
   * the commit, the rows are read from the flushed batch, and snapshots read them from there too.
   */
  flush(): void {
    this.checkWritten();
    if (this.buffered === 0) return;
    const groupOf = (key: Key) => keyGroupOf(key, this.owner.maxParallelism);
    const flush = ++this.flushes;
    const commits: Promise<boolean>[] = [];
    for (const rows of this.valueRows) rows.flush(groupOf, flush, commits);
    this.buffered = 0;
    Promise.all(commits).then(
      () => {
        if (!this.disposed) for (const rows of this.valueRows) rows.committed(flush);
      },
      (error: unknown) => {
        this.writeFailure ??= error;
      },
    );
  }

  /** Forgets the value states: commits LMDB reports after this change nothing. */
  dispose(): void {
    this.disposed = true;
    this.valueRows.length = 0;
  }

  private checkWritten(): void {
    if (this.writeFailure === undefined) return;
    const { uid, directory } = this.owner;
    throw new WeirError(
      `operator '${uid}': the LMDB state backend could not write its working state in ${directory} ` +
        `(${String((this.writeFailure as Error)?.message ?? this.writeFailure)}); free disk space under its path, or give the backend another path`,
      { cause: this.writeFailure },
    );
  }
}
