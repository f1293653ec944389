import type { Json } from './values.js';
import type { SourceReader } from './sourceReader.js';

/**
 * One part of a source's input that a reader reads on its own (Flink's FLIP-27 `SourceSplit`): an index range of an
 * array, a line-aligned byte range of a file, one file of several, later a broker partition.
 */
export interface SourceSplit {
  /** Stable across runs: a checkpoint saves each split's offset under its id. */
  readonly id: string;
  /** What the split covers, as JSON, so that it can be shown in messages and sent to another thread. */
  readonly description: Json;
}

/** How far a split has been read, as a subtask saves it in a checkpoint. */
export interface SplitState {
  readonly id: string;
  /** The split reader's offset; `null` when the split has not been started. */
  readonly offset: Json;
  /** Read to its end: a restore never reads it again. */
  readonly finished: boolean;
}

/**
 * A source's input described as splits, which `parallelism` subtasks read side by side: the enumerator (the job)
 * assigns split k to subtask k mod parallelism, and each subtask reads its splits one after another (or side by
 * side, `interleaved`).
 * @example
 * const splits: SourceSplits<number> = {
 *   list: () => [{ id: 'a', description: 'a' }, { id: 'b', description: 'b' }],
 *   open: (split, { restoredOffset }) => readerOf(split.id, restoredOffset),
 * };
 */
export interface SourceSplits<T> {
  /**
   * Read a subtask's splits side by side rather than one after another (Flink's SourceReader over a broker's
   * partitions): every split assigned to the subtask is open at once, each with one read in flight, and the reads
   * that come back go out in turn. For splits that may never end (a broker's subjects or streams, read unbounded),
   * so that one subtask follows them all. Default false: a subtask reads its splits in turn, one open at a time
   * (files, arrays), each split's records before the next one's.
   */
  readonly interleaved?: boolean;
  /** Every split of the input, in a stable order; listed once per attempt, before any is read. */
  list(): readonly SourceSplit[] | Promise<readonly SourceSplit[]>;
  /** A reader of one split, from its start (`restoredOffset` undefined) or from an offset its reader reported. */
  open(split: SourceSplit, context: { uid: string; restoredOffset: Json | undefined }): SourceReader<T> | Promise<SourceReader<T>>;
  /**
   * The split states that the offset of this source's single reader stands for (a checkpoint written before the
   * source had splits, by `Source.open`'s reader). Without it, such a checkpoint cannot be restored into splits.
   */
  fromOffset?(offset: Json, splits: readonly SourceSplit[], context: { uid: string }): SplitState[];
}
