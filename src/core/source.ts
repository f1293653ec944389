import type { Json } from './values.js';

/** Reads a source for one attempt of a job. */
export interface SourceReader<T> {
  /**
   * Up to `max` records; an empty array when none is ready yet, `null` at the end of input. May return a promise
   * (waiting for input); the engine injects barriers only between two reads.
   */
  read(max: number): T[] | null | Promise<T[] | null>;
  /** Position just after the last record returned by `read`, from which `open` resumes. */
  offset(): Json;
  close?(): void | Promise<void>;
}

/**
 * Where records come from. A replayable source resumes from an offset saved in a checkpoint, which is what gives
 * exactly-once state after a restore; implement this interface for your own sources.
 */
export interface Source<T> {
  /** Shown in messages, e.g. `fromFile(tx.jsonl)`. */
  readonly name: string;
  readonly replayable: boolean;
  open(context: { uid: string; restoredOffset: Json | undefined }): SourceReader<T> | Promise<SourceReader<T>>;
  /** The job ended (finished, failed for good or cancelled): release what outlives attempts. */
  ended?(): void;
}
