import { KeyedFlow } from '../core/flow.js';
import type { GraphNode, KeySelector } from '../core/graph.js';
import type { JobGraph } from '../core/jobGraph.js';
import type { Trigger, WindowAssigner } from './windowTypes.js';

/** How a keyed flow is windowed: set by `window()`, applied by the window function (`reduce`, `aggregate`, `process`) after it. */
export interface WindowSpec {
  readonly assigner: WindowAssigner;
  readonly trigger: Trigger;
  /** The trigger is the assigner's default one (no `trigger` option), whose firing the operator may rely on. */
  readonly defaultTrigger: boolean;
  readonly allowedLateness: number;
}

/** A keyed flow cut into windows (Flink's WindowedStream); a window function turns it back into a flow. */
export class WindowedFlow<T> extends KeyedFlow<T> {
  constructor(graph: JobGraph, node: GraphNode, keySelector: KeySelector<T>, timestamped: boolean, readonly window: WindowSpec) {
    super(graph, node, keySelector, timestamped);
  }
}
