/**
 * State file writes under way at once, bounded by their bytes: a writer adds each write and waits for `room` before
 * encoding more, so that encoding runs ahead of the storage without holding a whole large snapshot in memory.
 * A write resolves false when its checkpoint was aborted; then every later `room` and `settle` answer false too.
 */
export class WritesInFlight {
  private readonly writes: { done: Promise<boolean>; bytes: number }[] = [];
  private bytes = 0;
  private ok = true;

  constructor(private readonly maxBytes: number) {}

  add(write: Promise<boolean>, bytes: number): void {
    // Its failure is seen when it is awaited (in `room` or `settle`); until then it must not count as unhandled.
    write.catch(() => undefined);
    this.writes.push({ done: write, bytes });
    this.bytes += bytes;
  }

  /** Waits until the writes under way hold fewer than the bound's bytes; false once one of them was aborted. */
  async room(): Promise<boolean> {
    while (this.ok && this.bytes >= this.maxBytes && this.writes.length > 0) await this.oldest();
    return this.ok;
  }

  /** Waits for every write under way; false when one was aborted. A write's error is thrown here. */
  async settle(): Promise<boolean> {
    while (this.writes.length > 0) await this.oldest();
    return this.ok;
  }

  private async oldest(): Promise<void> {
    const { done, bytes } = this.writes.shift()!;
    this.bytes -= bytes;
    if (!(await done)) this.ok = false;
  }
}
