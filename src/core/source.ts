import type { Json } from './values.js';
import type { SourceReader } from './sourceReader.js';
import type { SourceSplits } from './split.js';

/**
 * Where records come from. A replayable source resumes from an offset saved in a checkpoint, which is what gives
 * exactly-once state after a restore; implement this interface for your own sources.
 */
export interface Source<T> {
  /** Shown in messages, e.g. `fromFile(tx.jsonl)`. */
  readonly name: string;
  readonly replayable: boolean;
  /** The whole input as one reader: how the job reads a source without `splits`. */
  open(context: { uid: string; restoredOffset: Json | undefined }): SourceReader<T> | Promise<SourceReader<T>>;
  /**
   * The input as splits (optional): the job then reads it with `parallelism` subtasks, each reading the splits
   * assigned to it, and saves every split's offset. A source without it is read by one subtask through `open`.
   */
  readonly splits?: SourceSplits<T>;
  /** The job ended (finished, failed for good or cancelled): release what outlives attempts. */
  ended?(): void;
}
