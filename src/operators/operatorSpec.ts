import type { CheckpointBarrier, SideOutputElement, Watermark } from '../core/elements.js';
import type { TaskContext } from '../core/graph.js';
import type { KeySelector } from '../core/graph.js';
import type { AnyStateDescriptor } from '../core/types.js';

// What a one-input operator is to the runtime: its description (OperatorSpec) and, per attempt, its handler. Apart from
// operate.ts, which adds operators to a graph, so that the chain that runs them needs only this.

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

/**
 * A stateless operator that is one function of each record, run by the chain itself (filter/map fusion, kept apart
 * from the operators as @most/core keeps it): one call per record, the function's, instead of two (the handler's and
 * the function's it calls), which matters most where the chain's shared code calls every operator of a process.
 */
export type FusedRecordFunction<T, R> = { filter(this: void, value: T): boolean } | { map(this: void, value: T): R };

export type OperatorSpec<T, R> = HandlerOperatorSpec<T, R> | (OperatorDescription & { fused: FusedRecordFunction<T, R>; setup?: undefined; absorb?: undefined });

/** An operator that runs as a handler of its own (every operator but the fused ones). */
export type HandlerOperatorSpec<T, R> = OperatorDescription & {
  /**
   * Called once per attempt when the operator is subscribed; `emit` sends a record downstream, `fail` fails the
   * attempt from callbacks that run outside record processing (timers).
   */
  setup(task: TaskContext, emit: (value: R) => void, fail: (error: unknown) => void): OperatorHandler<T>;
  /**
   * One operator doing this one's work and then `next`'s, for operators that must run as one when chained
   * (consecutive RxJS operators form one rxjs chain); undefined to chain them as usual. It runs as this operator's
   * task.
   */
  absorb?(next: OperatorSpec<R, unknown>): OperatorSpec<T, unknown> | undefined;
  fused?: undefined;
};

/** What every one-input operator says about itself, however it runs. */
export interface OperatorDescription {
  kind: string;
  uid?: string;
  stateful?: boolean;
  /** Whether the output carries timestamps; the input's by default. */
  timestamped?: boolean;
  /** Parallel instances of a keyed operator (each acknowledges checkpoints on its own). */
  parallelism?: number;
  /** Keyed states the operator declares, registered in each instance's backend before any record. */
  states?: readonly AnyStateDescriptor[];
  /** A keyed operator's key selector (see `GraphNode.keySelector`). */
  keySelector?: KeySelector<never>;
}
