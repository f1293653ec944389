import { JobDefinitionError } from '../core/errors.js';
import type { GraphNode, KeySelector } from '../core/graph.js';
import type { JobGraph } from '../core/jobGraph.js';

/** Which worker of how many this thread is, when a job runs on worker threads (`startJob`). */
export interface Placement {
  readonly worker: number;
  readonly workers: number;
}

/**
 * How records reach a node that runs on worker threads: `key`, to the worker of their key's instance; `first`, to
 * worker 0 (a node with one instance that holds state: a sink, a source without splits, an unkeyed stateful
 * operator); `local`, where they are (a stateless operator runs in every worker, chained to its input there).
 */
export type Route = { readonly kind: 'key'; readonly selector: KeySelector<never>; readonly parallelism: number } | { readonly kind: 'first' } | { readonly kind: 'local' };

/** The worker that runs subtask `subtask` of a node: instance i (a keyed instance, a source subtask) in worker i mod workers. */
export function workerOfSubtask(subtask: number, placement: Placement): number {
  return subtask % placement.workers;
}

/** Where the records a node reads go first (see `Route`). */
export function routeOf(node: GraphNode): Route {
  if (node.source) return { kind: 'local' };
  if (node.sink) return { kind: 'first' };
  if (!node.stateful) return { kind: 'local' };
  if (node.keySelector) return { kind: 'key', selector: node.keySelector, parallelism: node.parallelism ?? 1 };
  return { kind: 'first' };
}

/**
 * Checks that every node can be spread over workers: an unkeyed stateful operator keeps one state that no key
 * divides, so it runs once, in worker 0, and must have parallelism 1.
 */
export function checkPlaceable(graph: JobGraph): void {
  for (const node of graph.nodes) {
    if (node.stateful && !node.source && !node.sink && !node.keySelector && (node.parallelism ?? 1) > 1) {
      throw new JobDefinitionError(
        `job '${graph.jobName}': operator '${node.uid}' holds unkeyed state with parallelism ${node.parallelism}, which worker threads cannot split; ` +
          'give it parallelism: 1 (it then runs in worker 0), or put keyBy before it',
      );
    }
  }
}
