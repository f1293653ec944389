import type { Flow } from '../core/flow.js';
import { KeyedFlow } from '../core/flow.js';
import type { GraphNode, KeySelector } from '../core/graph.js';
import type { JobGraph } from '../core/jobGraph.js';
import type { ProcessWindowFunction, WindowContents } from './windowFunction.js';
import type { Trigger, WindowAssigner } from './windowTypes.js';

/**
 * Turns a windowed flow back into a flow, given how a window function keeps a window's contents and, optionally, the
 * ProcessWindowFunction that receives its results: the window operator, which `window()` hands in, so that the window
 * functions (`reduce`, `aggregate`, `process`) need not know it.
 */
export type ApplyWindowFunction = <T, R>(
  input: WindowedFlow<T>,
  kind: string,
  uid: string | undefined,
  contents: WindowContents<T>,
  userFunction: ProcessWindowFunction<unknown, R> | undefined,
  parallelism?: number,
) => Flow<R>;

/** How a keyed flow is windowed: set by `window()`, applied by the window function (`reduce`, `aggregate`, `process`) after it. */
export interface WindowSpec {
  readonly assigner: WindowAssigner;
  readonly trigger: Trigger;
  /** The trigger is the assigner's default one (no `trigger` option), whose firing the operator may rely on. */
  readonly defaultTrigger: boolean;
  readonly allowedLateness: number;
  /** Applies a window function to these windows. */
  readonly apply: ApplyWindowFunction;
}

/** A keyed flow cut into windows (Flink's WindowedStream); a window function turns it back into a flow. */
export class WindowedFlow<T> extends KeyedFlow<T> {
  constructor(graph: JobGraph, node: GraphNode, keySelector: KeySelector<T>, timestamped: boolean, readonly window: WindowSpec) {
    super(graph, node, keySelector, timestamped);
  }
}
