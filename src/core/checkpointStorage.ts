/**
 * Where snapshot bytes are persisted. Paths are `/`-separated and relative to the storage's root. Implementations
 * keep to these few methods; layout, formats, checksums and retention live above them, shared by every storage.
 */
export interface CheckpointStorage {
  /** Human-readable root, used in messages (a directory, `memory`, a database name). */
  readonly location: string;
  /** Largest snapshot of one operator this storage accepts, in bytes (Flink's memory storage limit). */
  readonly maxStateSize?: number;
  /** Writes all bytes or nothing: a reader never sees a torn file. */
  write(path: string, data: Uint8Array): Promise<void>;
  /**
   * True when the storage keeps no reference to a write's `data` once the write settled (it wrote the bytes out, or
   * kept a copy). Checkpoints then write their next state files into the same buffers, which spares V8 a full
   * collection every checkpoint or two of a large state (see `BufferPool`); a storage that does not say so gets
   * fresh buffers, so one that keeps what it was given stays correct.
   */
  readonly releasesWrittenData?: boolean;
  /**
   * Optional, for a storage reached in another thread (a worker's view of the main thread's storage): writes `data`
   * as `write` does, but takes its buffer (transferred to that thread, not copied: `data` is detached) and resolves
   * with the same bytes given back once written. A checkpoint's state files go this way, into buffers reused from
   * one checkpoint to the next (see `BufferPool`): cloned, each file was copied twice and the main thread allocated
   * its size anew (~4.5 ms of CPU per 5 MB file, and the main thread's garbage).
   */
  writeTaking?(path: string, data: Uint8Array): Promise<Uint8Array>;
  /** Reads a file; rejects with `CheckpointNotFoundError` when it does not exist. */
  read(path: string): Promise<Uint8Array>;
  /**
   * Optional, for storages that keep structured-clone values (IndexedDB): writes a state file with values kept
   * beside its bytes, all or nothing. Checkpoints then set rich state values (Map, Set, Date, BigInt, …) aside for
   * the storage to clone instead of encoding them with superjson; `readStructured` must give them back.
   */
  writeStructured?(path: string, data: Uint8Array, values: readonly unknown[]): Promise<void>;
  /** With `writeStructured`: a file's bytes and the values kept beside them (none for a file written by `write`). */
  readStructured?(path: string): Promise<{ data: Uint8Array; values: readonly unknown[] }>;
  /** Names of the direct children of a directory (files and directories); empty when it does not exist. */
  list(dir: string): Promise<string[]>;
  /** Removes a file or a directory with everything under it; no error when it does not exist. */
  remove(path: string): Promise<void>;
  /** Where a path is, for users (an absolute path on disk); defaults to the path itself. */
  describe?(path: string): string;
  /**
   * Optional: takes the exclusive lock of a job's directory for as long as a run of the job lasts, rejecting with
   * `CheckpointDirectoryLockedError` while another live run holds it. Storages shared between processes (the file
   * system) implement it; a lock left by a process that died must not block forever.
   */
  lock?(job: string): Promise<CheckpointLock>;
}

/** A held `CheckpointStorage.lock`. */
export interface CheckpointLock {
  /** Gives the lock up; a no-op once the lock was taken over or removed. */
  release(): Promise<void>;
}
