import type { Flow } from '../core/flow.js';
import type { Json, Sink } from '../core/types.js';
import { sinkTo } from './sinkTo.js';

/** An in-memory, exactly-once sink for tests and small jobs. */
export interface Collector<T> {
  /** Every committed record, in arrival order. */
  readonly values: readonly T[];
  /** The sink to end a flow with. */
  sink(options?: { uid?: string }): (input: Flow<T>) => void;
}

/**
 * Collects records in memory, exactly once within this process: records become visible in `values` when the
 * checkpoint after them completes (or at the end of input), and records of a failed attempt that no checkpoint
 * covers are dropped before the restart replays them.
 * @example
 * const out = collect<number>();
 * job.source(fromArray([1, 2, 3]), { uid: 'n' }).pipe(map((n) => n * 2), out.sink());
 * await job.start().done; // out.values → [2, 4, 6]
 */
export function collect<T>(): Collector<T> {
  const values: T[] = [];
  // Records pre-committed by a checkpoint barrier, waiting for that checkpoint to complete. They outlive an attempt:
  // the restarted attempt commits those its restored checkpoint covers.
  const pending = new Map<number, T[]>();
  const commitUpTo = (id: number) => {
    for (const [checkpoint, records] of pending) {
      if (checkpoint > id) continue;
      // A loop, not push(...records): spreading a large array overflows the call stack.
      for (const record of records) values.push(record);
      pending.delete(checkpoint);
    }
  };
  const sink: Sink<T> = {
    name: 'collect',
    open({ restoredState }) {
      const restoredId = (restoredState as { checkpoint?: number } | undefined)?.checkpoint;
      if (restoredId !== undefined) commitUpTo(restoredId);
      pending.clear();
      let buffer: T[] = [];
      return {
        write: (value) => void buffer.push(value),
        snapshot(checkpointId): Json {
          pending.set(checkpointId, buffer);
          buffer = [];
          return { checkpoint: checkpointId };
        },
        commit: commitUpTo,
        finish() {
          commitUpTo(Infinity);
          for (const record of buffer) values.push(record);
          buffer = [];
        },
        abort() {
          buffer = [];
        },
      };
    },
  };
  return { values, sink: (options) => sinkTo(sink, options) };
}
