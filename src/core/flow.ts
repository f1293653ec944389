import type { GraphNode, KeySelector } from './graph.js';
import type { JobGraph } from './jobGraph.js';

type Fn<A, B> = (a: A) => B;

/**
 * A stream of records in a job's dataflow graph: what `job.source()` returns and weir operators take and give.
 * Like an RxJS Observable it composes with `pipe`; unlike one, it is a description: applying an operator adds a
 * node to the job's graph (as Flink's DataStream API does before `execute()`), and nothing runs until the job
 * starts. Leave weir for plain RxJS with `asObservable()`.
 */
export class Flow<T> {
  /** Phantom field carrying the record type; never set. */
  declare readonly __type?: T;

  constructor(
    /** The graph this flow belongs to. */
    readonly graph: JobGraph,
    /** The node whose output this flow is. */
    readonly node: GraphNode,
    /** Records carry event timestamps and watermarks (an `assignTimestamps` or window is upstream). */
    readonly timestamped = false,
  ) {}

  pipe(): this;
  pipe<A>(op1: Fn<this, A>): A;
  pipe<A, B>(op1: Fn<this, A>, op2: Fn<A, B>): B;
  pipe<A, B, C>(op1: Fn<this, A>, op2: Fn<A, B>, op3: Fn<B, C>): C;
  pipe<A, B, C, D>(op1: Fn<this, A>, op2: Fn<A, B>, op3: Fn<B, C>, op4: Fn<C, D>): D;
  pipe<A, B, C, D, E>(op1: Fn<this, A>, op2: Fn<A, B>, op3: Fn<B, C>, op4: Fn<C, D>, op5: Fn<D, E>): E;
  pipe<A, B, C, D, E, F>(op1: Fn<this, A>, op2: Fn<A, B>, op3: Fn<B, C>, op4: Fn<C, D>, op5: Fn<D, E>, op6: Fn<E, F>): F;
  pipe<A, B, C, D, E, F, G>(
    op1: Fn<this, A>, op2: Fn<A, B>, op3: Fn<B, C>, op4: Fn<C, D>, op5: Fn<D, E>, op6: Fn<E, F>, op7: Fn<F, G>,
  ): G;
  pipe<A, B, C, D, E, F, G, H>(
    op1: Fn<this, A>, op2: Fn<A, B>, op3: Fn<B, C>, op4: Fn<C, D>, op5: Fn<D, E>, op6: Fn<E, F>, op7: Fn<F, G>, op8: Fn<G, H>,
  ): H;
  // Nine typed operators, as RxJS's own pipe has: past them the rest overload types the result as unknown.
  pipe<A, B, C, D, E, F, G, H, I>(
    op1: Fn<this, A>, op2: Fn<A, B>, op3: Fn<B, C>, op4: Fn<C, D>, op5: Fn<D, E>, op6: Fn<E, F>, op7: Fn<F, G>, op8: Fn<G, H>,
    op9: Fn<H, I>,
  ): I;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the overloads above carry the types
  pipe(...operators: Fn<any, unknown>[]): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  pipe(...operators: Fn<any, unknown>[]): unknown {
    return operators.reduce<unknown>((flow, operator) => operator(flow), this);
  }
}

/** A flow partitioned by key (`keyBy`): keyed operators that follow see one key's state per record. */
export class KeyedFlow<T> extends Flow<T> {
  constructor(graph: JobGraph, node: GraphNode, readonly keySelector: KeySelector<T>, timestamped = false) {
    super(graph, node, timestamped);
  }
}
