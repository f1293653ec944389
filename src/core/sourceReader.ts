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
  /**
   * Records not read yet, for readers that know (an in-memory array; a broker consumer's lag): read when metrics are
   * collected (`weir_source_lag_records`), never per record, so it must be cheap.
   */
  lag?(): number | undefined;
}
