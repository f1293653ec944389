import { JobDefinitionError } from '../core/errors.js';

/** Window state lives per key and window, which a point query by key cannot name (Flink does not query it either). */
export function rejectWindowQueryable(kind: string, queryable: string | undefined): void {
  if (queryable !== undefined) {
    throw new JobDefinitionError(
      `${kind} after window(…): the queryable option is for the rolling ${kind}; to query window results, keep them in a queryable state of a process function downstream`,
    );
  }
}

/** Rejects a ProcessWindowFunction given to a window function on a flow that is not windowed. */
export function rejectWindowOnly(kind: string, process: unknown): void {
  if (process !== undefined) {
    throw new JobDefinitionError(`${kind}: the process option is a window function; use it after window(…)`);
  }
}
