import type { Json, SourceReader, SourceSplits } from '../core/types.js';
import type { AssignedSplit, SavedSplits } from './splitEnumerator.js';
import type { SplitTracking } from './splitTracking.js';

interface LiveSplit<T> {
  readonly assigned: AssignedSplit;
  /** The split's offset after the last records handed to the engine: what a checkpoint saves. */
  offset: Json;
  finished: boolean;
  reader: SourceReader<T> | undefined;
  /** An open or a read of the split is in flight, or its outcome waits in the queue: one at a time per split. */
  busy: boolean;
}

/** A split's read that came back: its records (null at its end) and its reader's offset right after them. */
type Outcome<T> = { split: LiveSplit<T>; records: T[] | null; offset: Json } | { split: LiveSplit<T>; error: unknown };

/**
 * The reader of one source subtask over splits that are read side by side (Flink's SourceReader over a broker's
 * partitions, `SourceSplits.interleaved`): every split assigned to the subtask is open, each has at most one read in
 * flight, and the reads that come back are handed to the engine in the order they came, each split taking its turn.
 * So one subtask follows several unbounded splits, none of which ends, and a split with nothing to read (whose read
 * waits) does not stop the others. A split's records stay in its order, and its saved offset is the one its reader
 * had right after the last records handed out, never one of a read still in flight or queued.
 */
export class InterleavedSplitReader<T> implements SourceReader<T>, SplitTracking {
  lastSplit = 0;
  onSplitEnd: ((index: number) => void) | undefined;
  private readonly live: LiveSplit<T>[];
  /** Where the next round of reads starts, so that synchronous readers take turns too. */
  private cursor = 0;
  private readonly ready: Outcome<T>[] = [];
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly splits: SourceSplits<T>,
    private readonly uid: string,
    assigned: readonly AssignedSplit[],
  ) {
    this.live = assigned.map((split) => ({ assigned: split, offset: split.offset, finished: split.finished, reader: undefined, busy: false }));
  }

  read(max: number): T[] | null | Promise<T[] | null> {
    for (;;) {
      const outcome = this.ready.shift();
      if (outcome !== undefined) {
        const records = this.take(outcome);
        if (records !== undefined) return records;
        continue;
      }
      if (this.live.every((split) => split.finished)) return null;
      const count = this.live.length;
      for (let k = 0; k < count; k++) {
        const index = (this.cursor + k) % count;
        const split = this.live[index]!;
        if (split.finished || split.busy) continue;
        const done = this.start(split, max);
        if (done === undefined) continue;
        this.cursor = (index + 1) % count;
        const records = this.take(done);
        if (records !== undefined) return records;
      }
      if (this.ready.length > 0 || this.live.some((split) => !split.finished && !split.busy)) continue;
      if (this.live.every((split) => split.finished)) return null;
      // Every split's read is in flight: the first to come back wakes the reader.
      return new Promise<void>((resolve) => (this.wake = resolve)).then(() => (this.closed ? null : this.read(max)));
    }
  }

  get splitIds(): string[] {
    return this.live.map((split) => split.assigned.split.id);
  }

  get endedSplits(): number[] {
    return this.live.flatMap((split, i) => (split.finished ? [i] : []));
  }

  offset(): SavedSplits & { [key: string]: Json } {
    return { splits: this.live.map((split) => ({ id: split.assigned.split.id, offset: split.offset, finished: split.finished })) };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.signal();
    const readers = this.live.flatMap((split) => (split.reader === undefined ? [] : [split.reader]));
    for (const split of this.live) split.reader = undefined;
    await Promise.all(readers.map((reader) => Promise.resolve(reader.close?.())));
  }

  /** Opens the split if need be and reads it: the outcome when it came at once, undefined when it is in flight. */
  private start(split: LiveSplit<T>, max: number): Outcome<T> | undefined {
    split.busy = true;
    if (split.reader === undefined) {
      const opened = this.splits.open(split.assigned.split, { uid: this.uid, restoredOffset: split.offset ?? undefined });
      if (opened instanceof Promise) {
        opened.then(
          (reader) => {
            if (this.closed) return void reader.close?.();
            split.reader = reader;
            split.busy = false;
            this.signal();
          },
          (error: unknown) => this.arrived({ split, error }),
        );
        return undefined;
      }
      split.reader = opened;
    }
    const reader = split.reader;
    const batch = reader.read(max);
    if (batch instanceof Promise) {
      batch.then(
        (records) => this.arrived({ split, records, offset: reader.offset() }),
        (error: unknown) => this.arrived({ split, error }),
      );
      return undefined;
    }
    return { split, records: batch, offset: reader.offset() };
  }

  private arrived(outcome: Outcome<T>): void {
    if (this.closed) return;
    this.ready.push(outcome);
    this.signal();
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Hands an outcome over: its records (the split's offset moves past them), or undefined when the split ended. */
  private take(outcome: Outcome<T>): T[] | undefined {
    const { split } = outcome;
    split.busy = false;
    if ('error' in outcome) throw outcome.error;
    split.offset = outcome.offset;
    if (outcome.records !== null) {
      this.lastSplit = this.live.indexOf(split);
      return outcome.records;
    }
    split.finished = true;
    this.onSplitEnd?.(this.live.indexOf(split));
    void split.reader?.close?.();
    split.reader = undefined;
    return undefined;
  }
}
