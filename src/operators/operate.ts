import { JobDefinitionError } from '../core/errors.js';
import { Flow, KeyedFlow } from '../core/flow.js';
import { OperatorChain } from './operatorChain.js';
import type { OperatorSpec } from './operatorSpec.js';

/**
 * Adds a one-input operator to the flow's graph. Its runtime is one handler per attempt, run in an `OperatorChain`
 * with the operators it directly follows; every throw from a user function, on any path, fails the attempt once, as a
 * `UserFunctionError` naming the operator, so that the job's restart strategy sees it. Errors from upstream pass on
 * as they are.
 */
export function operate<T, R>(input: Flow<T>, spec: OperatorSpec<T, R>): Flow<R> {
  const node = input.graph.add({
    kind: spec.kind,
    uid: spec.uid,
    role: 'operator',
    stateful: spec.stateful ?? false,
    parallelism: spec.parallelism,
    states: spec.states,
    keySelector: spec.keySelector,
    inputs: [input.node],
    // An operator that is the only consumer of another joins its chain (see OperatorChain).
    build: (task, [upstream]) => OperatorChain.after(upstream!, { task, spec: spec }),
  });
  return new Flow<R>(input.graph, node, spec.timestamped ?? input.timestamped);
}

/** The key selector of a keyed flow, or a definition error saying that `keyBy` must come first. */
export function requireKeyed<T>(flow: Flow<T>, operator: string): KeyedFlow<T> {
  if (!(flow instanceof KeyedFlow)) {
    throw new JobDefinitionError(`${operator} needs a keyed flow: put keyBy(record => key) before it`);
  }
  return flow as KeyedFlow<T>;
}

