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
