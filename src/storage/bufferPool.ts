/**
 * Byte buffers kept for reuse by the state files of a task's checkpoints, up to `maxBytes` of them idle.
 *
 * Why: a file's buffer lives while the storage writes it (an fsync), so it outlives young-generation collections,
 * and V8 frees its memory only in a full collection. Every such allocation counts as external memory, and past
 * 64 MiB of it V8 starts a full collection: a 10⁶-key state's checkpoint (~40 MB of files) brought one every one or
 * two checkpoints, each ~0.5 s of marking on the job's thread (`--trace-incremental-marking`: "external memory
 * pressure"). Reused, the buffers are allocated once for all checkpoints.
 *
 * A buffer goes back only once its write settled: every storage copies what it keeps (see `CheckpointStorage.write`).
 */
export class BufferPool {
  private readonly idle: Uint8Array[] = [];
  private idleBytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** A buffer of at least `min` bytes (contents undefined): the largest idle one when it is big enough, else a new one of `size`. */
  take(min: number, size = min): Uint8Array {
    let best = -1;
    for (let i = 0; i < this.idle.length; i++) if (this.idle[i]!.length >= min && (best < 0 || this.idle[i]!.length > this.idle[best]!.length)) best = i;
    if (best < 0) return new Uint8Array(Math.max(min, size));
    const [buffer] = this.idle.splice(best, 1);
    this.idleBytes -= buffer!.length;
    return buffer!;
  }

  /** Gives `buffer` back (the whole of it: a view's underlying buffer); dropped when the pool is full. */
  give(view: Uint8Array): void {
    // Detached: its buffer went to another thread (`CheckpointStorage.writeTaking`), which gives it back itself.
    if (view.buffer.byteLength === 0) return;
    if (this.idleBytes + view.buffer.byteLength > this.maxBytes || this.idle.some((idle) => idle.buffer === view.buffer)) return;
    const buffer = view.byteOffset === 0 && view.length === view.buffer.byteLength ? view : new Uint8Array(view.buffer);
    this.idle.push(buffer);
    this.idleBytes += buffer.length;
  }
}
