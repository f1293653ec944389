/**
 * What a subtask's split reader tells of its splits, so that watermarks can be generated per split (Flink's
 * per-split watermarks in the SourceReader): which split the records of the last read came from, and which ended.
 */
export interface SplitTracking {
  /** The ids of the subtask's splits, by index. */
  readonly splitIds: readonly string[];
  /** The index of the split whose records the last `read` returned. */
  readonly lastSplit: number;
  /** The indexes of the splits read to their end. */
  readonly endedSplits: readonly number[];
  /** Called with a split's index when it is read to its end. */
  onSplitEnd: ((index: number) => void) | undefined;
}
