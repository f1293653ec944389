import type { CheckpointBarrier, SideOutputElement, Watermark } from '../core/elements.js';
import { JobDefinitionError } from '../core/errors.js';
import { Flow, KeyedFlow } from '../core/flow.js';
import type { TaskContext } from '../core/graph.js';
import type { AnyStateDescriptor } from '../core/types.js';
import { OperatorChain } from './operatorChain.js';

/** How an operator handles elements for one attempt; everything but `onRecord` is optional. */
export interface OperatorHandler<T> {
  onRecord(value: T): void;
  /** Stateful operators capture their state here; the default forwards the barrier. */
  onBarrier?(barrier: CheckpointBarrier, forward: () => void): void;
  /** Operators with event-time timers fire them here; the default forwards the watermark. */
  onWatermark?(watermark: Watermark, forward: () => void): void;
  /** Side-output readers take their records here; every other operator drops side-output records. */
  onSideOutput?(element: SideOutputElement): void;
  onComplete?(): void;
  /** The attempt is over: cancel timers and other resources. */
  dispose?(): void;
}

export interface OperatorSpec<T, R> {
  kind: string;
  uid?: string;
  stateful?: boolean;
  /** Whether the output carries timestamps; the input's by default. */
  timestamped?: boolean;
  /** Parallel instances of a keyed operator (each acknowledges checkpoints on its own). */
  parallelism?: number;
  /** Keyed states the operator declares, registered in each instance's backend before any record. */
  states?: readonly AnyStateDescriptor[];
  /**
   * Called once per attempt when the operator is subscribed; `emit` sends a record downstream, `fail` fails the
   * attempt from callbacks that run outside record processing (timers).
   */
  setup(task: TaskContext, emit: (value: R) => void, fail: (error: unknown) => void): OperatorHandler<T>;
}

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
    inputs: [input.node],
    // An operator that is the only consumer of another joins its chain (see OperatorChain).
    build: (task, [upstream]) => OperatorChain.after(upstream!, { task, spec: spec as OperatorSpec<unknown, unknown> }),
  });
  return new Flow<R>(input.graph, node, spec.timestamped ?? input.timestamped);
}

/** The key selector of a keyed flow, or a definition error saying that `keyBy` must come first. */
export function requireKeyed<T>(flow: Flow<T>, operator: string): KeyedFlow<T> {
  if (!(flow instanceof KeyedFlow)) {
    throw new JobDefinitionError(`${operator} needs a keyed flow: put keyBy(record => key) before it`);
  }
  return flow;
}

