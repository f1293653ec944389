import type { VirtualTimeScheduler } from 'rxjs';
import type { CheckpointMode } from '../core/graph.js';
import type { Flow } from '../core/flow.js';
import type { StateBackend } from '../core/types.js';
import type { HarnessSnapshot } from './harnessSnapshot.js';

/**
 * A pipeline fragment: flows in, one flow out, built from weir operators exactly as in a job. One parameter per
 * input; `harness` counts them (or takes `options.inputs`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the inputs of a multi-input fragment have their own types
export type Fragment<I, R> = (input: Flow<I>, ...more: Flow<any>[]) => Flow<R>;

export interface HarnessOptions {
  /** Number of inputs; the fragment's parameter count by default. */
  inputs?: number;
  /** Where working state lives; `heapStateBackend()` by default. `lmdbStateBackend({ path })` from 'weir/node' works alike. */
  stateBackend?: StateBackend;
  /**
   * The processing-time clock: a `VirtualTimeScheduler` (a `TestScheduler` for marbles). A fresh one by default,
   * moved by `setProcessingTime`.
   */
  scheduler?: VirtualTimeScheduler;
  /** Processing time at start: 0 by default, or the restored snapshot's time. */
  startTime?: number;
  /** Key groups (default 128). */
  maxParallelism?: number;
  /** Instances of each keyed operator that does not say otherwise (default 1). */
  parallelism?: number;
  /**
   * Whether pushed records carry event timestamps and pushed watermarks (default true). Set it to false for a
   * fragment that begins with its own `assignTimestamps`.
   */
  timestamped?: boolean;
  /** Barrier alignment at multi-input operators (default `'exactly-once'`). */
  mode?: CheckpointMode;
  /** Exactly-once only: an alignment older than this (ms of processing time) turns unaligned. */
  alignedTimeout?: number;
  /** Largest snapshot of one operator, in bytes (the memory checkpoint storage's limit, 5 MB by default). */
  maxStateSize?: number;
  /** Start from this snapshot, as a job restores a checkpoint. */
  restore?: HarnessSnapshot;
  /**
   * A checkpoint not complete after this many ms of processing time is aborted (default 600 000, as in a job);
   * `Infinity` never aborts (marble tests use it, since `TestScheduler.run` flushes every pending action).
   */
  checkpointTimeout?: number;
  /** Restore even when the snapshot holds state of operators the fragment does not have; that state is dropped. */
  allowNonRestoredState?: boolean;
}

/** A record an operator with several inputs holds while it aligns a checkpoint's barriers. */
export interface HeldRecord {
  readonly input: number;
  readonly value: unknown;
  readonly timestamp: number | undefined;
}
