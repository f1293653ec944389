import type { Key, StateDescriptor } from '../core/types.js';
import type { Output } from '../operators/processFunction.js';
import type { Window } from './windowTypes.js';

/** What a process window function sees besides the elements. */
export interface WindowContext {
  readonly window: Window;
  readonly currentWatermark: number;
  currentProcessingTime(): number;
}

/**
 * Flink's ProcessWindowFunction: called once per window firing with the key, the window and its elements (or, after
 * `reduce`/`aggregate`, the single pre-aggregated result).
 * @example
 * process({ process(user, ctx, clicks, out) { out.emit({ user, from: ctx.window.start, clicks: clicks.length }); } }, { uid: 'sessions' })
 */
export interface ProcessWindowFunction<IN, OUT> {
  process(key: Key, ctx: WindowContext, elements: IN[], out: Output<OUT>): void;
}

/**
 * How a window function keeps a window's contents: incrementally in a reducing or aggregating state (one value per
 * window, whatever its size), or as the list of elements when it needs them all (process functions, evictors).
 */
export interface WindowContents<T> {
  readonly name: string;
  /** The incremental state and how to read its one result; absent when only the elements will do. */
  readonly incremental?: {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type (the accumulator)
    descriptor: StateDescriptor<{ add(value: T): void; get(): unknown; clear(): void }, any>;
  };
  /**
   * For functions whose partial results merge (reduce, aggregate): a state whose `get` reads the stored partial
   * result itself, how two merge and how the merged one is read out. With it, tumbling and sliding windows keep
   * slices shared by overlapping windows (Flink's slice-based window aggregation).
   */
  readonly slicing?: WindowSlicing<T>;
  /** The results of a window from its elements, when the contents are listed. */
  fromElements(elements: T[]): unknown[];
}

/** How a window function's partial results are kept per slice and merged into a window's (see `WindowContents`). */
export interface WindowSlicing<T> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type (the accumulator)
  readonly descriptor: StateDescriptor<{ add(value: T): void; get(): unknown; clear(): void }, any>;
  /** Adds a record to a partial result the operator keeps in memory and owns (undefined: none yet); returns it. */
  accumulate(partial: unknown, value: T): unknown;
  /** What to `add` to the descriptor's state so that it merges in a partial result made by `accumulate`. */
  toAdd(partial: unknown): T;
  /** Merges `b` into `a`, which is a private copy and may be modified; `b` is a slice's state and must not be. */
  merge(a: unknown, b: unknown): unknown;
  /** The window's result from its merged partial result. */
  result(merged: unknown): unknown;
}
