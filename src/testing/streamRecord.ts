import { CancelCheckpointMarker, CheckpointBarrier, Watermark } from '../core/elements.js';

/**
 * A record with the event timestamp it carries (Flink's StreamRecord): what the harness's `output()` lists and what
 * marble diagrams use for records. weir records travel unwrapped; this wrapper exists only at the test's edge.
 */
export class StreamRecord<T> {
  constructor(
    readonly value: T,
    /** Event time in ms; undefined for a record without one. */
    readonly timestamp?: number,
  ) {}
}

/**
 * A record with an event timestamp, for marble values and expected output.
 * @example expect(h.output()).toEqual([record({ key: 'a', sum: 3 }, 2999)])
 */
export function record<T>(value: T, timestamp?: number): StreamRecord<T> {
  return new StreamRecord(value, timestamp);
}

/**
 * A watermark, for marble values and expected output (`output({ watermarks: true })`).
 * @example cold('a-w|', { a: record(x, 1000), w: watermark(2999) })
 */
export function watermark(timestamp: number): Watermark {
  return new Watermark(timestamp);
}

/**
 * Checkpoint barrier `id`, for marble values: the harness starts checkpoint `id` where it appears on an input.
 * @example cold('a-b-(B|)', { a: record(x, 1), b: record(y, 2), B: barrier(1) })
 */
export function barrier(id: number): CheckpointBarrier {
  return new CheckpointBarrier(id, 0, false);
}

/**
 * The cancellation marker of checkpoint `id`, for marble values: operators aligning for it stop and release what
 * they hold.
 */
export function cancelMarker(id: number): CancelCheckpointMarker {
  return new CancelCheckpointMarker(id);
}

/** What the harness emits: records with their timestamps, and (when asked) watermarks. */
export type OutputElement<T> = StreamRecord<T> | Watermark;
