import type { Json, SourceReader, SourceSplits } from '../core/types.js';
import { InterleavedSplitReader } from './interleavedSplitReader.js';
import type { AssignedSplit, SavedSplits } from './splitEnumerator.js';
import type { SplitTracking } from './splitTracking.js';

/** The reader of a subtask's splits: side by side when the source asks for it (`interleaved`), else in turn. */
export function splitReaderFor<T>(splits: SourceSplits<T>, uid: string, assigned: readonly AssignedSplit[]): SourceReader<T> & SplitTracking {
  return splits.interleaved === true ? new InterleavedSplitReader(splits, uid, assigned) : new SplitReader(splits, uid, assigned);
}

interface SplitProgress {
  readonly assigned: AssignedSplit;
  offset: Json;
  finished: boolean;
}

/**
 * The reader of one source subtask (Flink's SourceReader over its assigned splits): reads its splits one after
 * another, opening each only when the previous one ended, so a subtask holds one split's resources at a time. Its
 * offset is the state of every split assigned to it (`SavedSplits`), which is what its checkpoints save. Reading
 * in turn rather than interleaved keeps each split's records in order and costs no switch per chunk.
 */
export class SplitReader<T> implements SourceReader<T>, SplitTracking {
  onSplitEnd: ((index: number) => void) | undefined;
  private readonly progress: SplitProgress[];
  /** Index in `progress` of the split being read. */
  private index = 0;
  private current: SourceReader<T> | undefined;
  private closed = false;

  constructor(
    private readonly splits: SourceSplits<T>,
    private readonly uid: string,
    assigned: readonly AssignedSplit[],
  ) {
    this.progress = assigned.map((split) => ({ assigned: split, offset: split.offset, finished: split.finished }));
  }

  read(max: number): T[] | null | Promise<T[] | null> {
    while (this.index < this.progress.length) {
      const split = this.progress[this.index]!;
      if (split.finished) {
        this.index++;
        continue;
      }
      if (this.current === undefined) {
        const opened = this.splits.open(split.assigned.split, { uid: this.uid, restoredOffset: split.offset ?? undefined });
        if (opened instanceof Promise) return opened.then((reader) => this.opened(reader, max));
        this.current = opened;
      }
      const batch = this.current.read(max);
      if (batch instanceof Promise) return batch.then((records) => (records === null ? this.next(max) : records));
      if (batch !== null) return batch;
      this.finish(split);
    }
    return null;
  }

  /** Records go out as they are read: the split being read is the one the last read returned. */
  get lastSplit(): number {
    return this.index;
  }

  get splitIds(): string[] {
    return this.progress.map((split) => split.assigned.split.id);
  }

  get endedSplits(): number[] {
    return this.progress.flatMap((split, i) => (split.finished ? [i] : []));
  }

  offset(): SavedSplits & { [key: string]: Json } {
    return {
      splits: this.progress.map((split, i) => ({
        id: split.assigned.split.id,
        offset: i === this.index && this.current !== undefined ? this.current.offset() : split.offset,
        finished: split.finished,
      })),
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const current = this.current;
    this.current = undefined;
    await current?.close?.();
  }

  /** A split opened asynchronously: read on, unless the subtask was closed meanwhile. */
  private opened(reader: SourceReader<T>, max: number): T[] | null | Promise<T[] | null> {
    if (this.closed) {
      void reader.close?.();
      return null;
    }
    this.current = reader;
    return this.read(max);
  }

  /** The split being read ended: go on with the next one. */
  private next(max: number): T[] | null | Promise<T[] | null> {
    this.finish(this.progress[this.index]!);
    return this.read(max);
  }

  private finish(split: SplitProgress): void {
    split.offset = this.current!.offset();
    split.finished = true;
    void this.current!.close?.();
    this.current = undefined;
    this.onSplitEnd?.(this.index);
    this.index++;
  }
}
