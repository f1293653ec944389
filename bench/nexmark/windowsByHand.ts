// Event-time windows written by hand, as the plain-RxJS and plain-loop versions of the windowed queries keep them:
// a Map of open windows and the watermark weir's `assignTimestamps({ interval: 0 })` would send.

/** The start of the window of `size` holding `timestamp` (timestamps are ≥ 0 here). */
export function windowStart(timestamp: number, size: number): number {
  return timestamp - (timestamp % size);
}

/**
 * Flink's bounded-out-of-orderness watermark: the largest timestamp seen minus the bound minus 1, advanced after
 * every record that raises it.
 */
export class Watermark {
  current = Number.NEGATIVE_INFINITY;
  private maxTimestamp = Number.NEGATIVE_INFINITY;

  constructor(private readonly outOfOrderness: number) {}

  /** Takes a record's timestamp; true when the watermark advanced. */
  advance(timestamp: number): boolean {
    if (timestamp <= this.maxTimestamp) return false;
    this.maxTimestamp = timestamp;
    const next = timestamp - this.outOfOrderness - 1;
    if (next <= this.current) return false;
    this.current = next;
    return true;
  }
}

/**
 * The open windows of `size` ms, by start, each with its contents. A window closes when the watermark reaches its
 * last instant (`start + size - 1`), as Flink's event-time trigger fires; a record for a closed window is late and
 * dropped, as weir drops it without allowed lateness.
 */
export class OpenWindows<S> {
  private readonly open = new Map<number, S>();

  constructor(
    private readonly size: number,
    private readonly create: () => S,
  ) {}

  /** The contents of the window starting at `start`, opened if need be; undefined if it is late. */
  get(start: number, watermark: Watermark): S | undefined {
    const contents = this.open.get(start);
    if (contents !== undefined) return contents;
    if (start + this.size - 1 <= watermark.current) return undefined;
    const opened = this.create();
    this.open.set(start, opened);
    return opened;
  }

  /** Closes every window whose last instant is at or before `time`, handing each to `close`. */
  closeUpTo(time: number, close: (start: number, contents: S) => void): void {
    for (const [start, contents] of this.open) {
      if (start + this.size - 1 > time) continue;
      this.open.delete(start);
      close(start, contents);
    }
  }
}
