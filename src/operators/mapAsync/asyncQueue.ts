import type { Watermark } from '../../core/elements.js';

/** One input record of a mapAsync instance, from its arrival until its result is emitted. */
export interface AsyncEntry<T, R> {
  readonly value: T;
  readonly timestamp: number | undefined;
  /** Which input of this instance it was in this attempt (1-based): names it in a timeout. */
  readonly position: number;
  /** How many watermarks came before it: an unordered result never leaves before them. */
  readonly segment: number;
  state: EntryState;
  result: R | undefined;
  /** Its calls while they run: cancelled when the attempt ends. */
  call: { cancel(): void } | undefined;
}

type EntryState = 'waiting' | 'running' | 'done' | 'emitted';

/** What a queue drives: the calls it starts, where results and watermarks go, and the source backpressure. */
export interface AsyncQueueOutput<T, R> {
  /** Starts the record's calls; `done` gets its result. Returns what runs, to cancel it. */
  start(entry: AsyncEntry<T, R>, done: (result: R) => void): { cancel(): void };
  emit(entry: AsyncEntry<T, R>): void;
  /** Every record before `watermark` has been emitted; the queue goes past it once `forwarded()` counts it. */
  watermark(watermark: Watermark): void;
  /** How many watermarks the operator has sent on (with several instances, once every instance reached them). */
  forwarded(): number;
  /** Raises backpressure while records wait for a free slot; returns the release. */
  raise(): () => void;
  /** Every record taken in has been emitted. */
  drained(): void;
}

/**
 * The records in flight of one mapAsync instance (Flink's StreamElementQueue): at most `capacity` started and not
 * yet emitted; the rest wait, in arrival order, and hold the sources back meanwhile. Ordered, results leave in input
 * order; unordered, as they complete, but never across a watermark: a watermark leaves once every record before it
 * has, and the records after it wait for it (Flink's UnorderedStreamElementQueue segments). With several instances
 * the records after a watermark wait until the operator has sent it on, that is until every instance reached it.
 */
export class AsyncQueue<T, R> {
  /** Records not yet emitted and watermarks not yet passed on, in arrival order (from `head`). */
  private items: (AsyncEntry<T, R> | Watermark)[] = [];
  private head = 0;
  /** Records not started yet, in arrival order (from `waitHead`). */
  private waiting: AsyncEntry<T, R>[] = [];
  private waitHead = 0;
  /** Records started and not yet emitted: what `capacity` bounds. */
  private started = 0;
  private unemitted = 0;
  /** Watermarks taken in, reported reached, and gone past (sent on by the operator). */
  private received = 0;
  private reached = 0;
  private passed = 0;
  private flushing = false;
  private positions = 0;
  private release: (() => void) | undefined;
  private disposed = false;

  constructor(
    private readonly ordered: boolean,
    private readonly capacity: number,
    private readonly out: AsyncQueueOutput<T, R>,
  ) {}

  /** Records taken in and not yet emitted. */
  get size(): number {
    return this.unemitted;
  }

  add(value: T, timestamp: number | undefined): void {
    const entry: AsyncEntry<T, R> = { value, timestamp, position: ++this.positions, segment: this.received, state: 'waiting', result: undefined, call: undefined };
    this.items.push(entry);
    this.waiting.push(entry);
    this.unemitted++;
    this.pump();
  }

  addWatermark(watermark: Watermark): void {
    this.received++;
    this.items.push(watermark);
    this.flush();
  }

  /** The operator sent a watermark on: the records after it may leave now. */
  resume(): void {
    this.flush();
  }

  /** The records not yet emitted, in arrival order: what a checkpoint saves. */
  pending(): AsyncEntry<T, R>[] {
    const pending: AsyncEntry<T, R>[] = [];
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (isEntry(item) && item.state !== 'emitted') pending.push(item);
    }
    return pending;
  }

  /** The attempt is over: running calls are aborted, late results dropped, the sources released. */
  dispose(): void {
    this.disposed = true;
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (isEntry(item)) item.call?.cancel();
    }
    this.release?.();
    this.release = undefined;
  }

  private complete(entry: AsyncEntry<T, R>, result: R): void {
    if (this.disposed) return;
    entry.result = result;
    entry.state = 'done';
    if (!this.ordered && entry.segment === this.passed) this.emitEntry(entry);
    this.flush();
    this.pump();
  }

  private emitEntry(entry: AsyncEntry<T, R>): void {
    entry.state = 'emitted';
    entry.call = undefined;
    this.started--;
    this.unemitted--;
    this.out.emit(entry);
  }

  /**
   * Emits from the head what may leave now: finished records in order, and reports each watermark whose records are
   * out. A flush started while one runs (the operator sent a watermark on from within it) is left to the running one,
   * which looks at the head again after every step.
   */
  private flush(): void {
    if (this.flushing) return;
    this.flushing = true;
    try {
      this.flushHead();
    } finally {
      this.flushing = false;
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    if (this.unemitted === 0) this.out.drained();
  }

  private flushHead(): void {
    const items = this.items;
    while (this.head < items.length && !this.disposed) {
      const item = items[this.head]!;
      if (isEntry(item)) {
        if (item.state === 'done') this.emitEntry(item);
        else if (item.state !== 'emitted') break;
        this.head++;
        continue;
      }
      if (this.reached === this.passed) {
        this.reached++;
        this.out.watermark(item);
      }
      if (this.out.forwarded() <= this.passed) break;
      this.head++;
      this.passed++;
      // Unordered: the records after this watermark that finished meanwhile may leave now.
      if (!this.ordered) {
        for (let i = this.head; i < items.length; i++) {
          const next = items[i]!;
          if (!isEntry(next)) break;
          if (next.state === 'done') this.emitEntry(next);
        }
      }
    }
  }

  /** Starts waiting records while there is room, and holds the sources back while some still wait. */
  private pump(): void {
    while (this.started < this.capacity && this.waitHead < this.waiting.length && !this.disposed) {
      const entry = this.waiting[this.waitHead++]!;
      this.started++;
      entry.state = 'running';
      const call = this.out.start(entry, (result) => this.complete(entry, result));
      if (entry.state === 'running') entry.call = call;
    }
    if (this.waitHead === this.waiting.length) {
      this.waiting = [];
      this.waitHead = 0;
      this.release?.();
      this.release = undefined;
    } else {
      if (this.waitHead > 1024) {
        this.waiting = this.waiting.slice(this.waitHead);
        this.waitHead = 0;
      }
      this.release ??= this.out.raise();
    }
  }
}

function isEntry<T, R>(item: AsyncEntry<T, R> | Watermark): item is AsyncEntry<T, R> {
  return 'segment' in item;
}
