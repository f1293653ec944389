import type { Observable, Observer, Operator, Subscribable, Subscription } from 'rxjs';
import { observable as interopKey } from 'rxjs';
import { JobDefinitionError } from './errors.js';
import type { GraphNode, KeySelector } from './graph.js';
import type { JobGraph } from './jobGraph.js';

/** The record type of a flow (`never` for what is not one). */
type RecordOf<F> = F extends { readonly __type?: infer R } ? R : never;

/**
 * One step of `Flow.pipe`: a weir operator (a function of the flow) or an RxJS operator (a function of an
 * Observable of its records, as `map` from 'rxjs' is).
 */
type Step<In, Out> = ((input: In) => Out) | ((source: Observable<RecordOf<In>>) => Out);

declare const outsideWeir: unique symbol;

/**
 * An Observable that left weir (what `asObservable()` returns). `pipe` types an RxJS operator's result as a flow of
 * its records (weir lifts it into the job), and this mark keeps an Observable that left weir one.
 */
export type OutsideWeir<T> = Observable<T> & { readonly [outsideWeir]?: true };

/** What a step gives, as the next step sees it: an RxJS operator's Observable result is a flow of its records. */
type Stepped<X> = typeof outsideWeir extends keyof X ? X : X extends Observable<infer R> ? Flow<R> : X;

/**
 * What RxJS 7's operators hand to `lift` (everything in 'rxjs' is built with `operate`, which calls `source.lift`):
 * per subscription, RxJS calls it as `operator.call(subscriber, source)`.
 */
export type LiftedOperator = Operator<unknown, unknown>;

/** How `lift` adds an RxJS operator to a flow's graph. */
export type Lift = (input: Flow<unknown>, operator: LiftedOperator) => Flow<unknown>;

// The runtime of RxJS operators lives a floor up (operators/rxjs), which registers it here when it loads: core
// cannot import it, and every program that builds a job loads it through the package's entry point.
let lift: Lift | undefined;

/** Registers how `Flow.lift` adds RxJS operators (operators/rxjs does, once). Internal: not exported from the package root. */
export function registerLift(implementation: Lift): void {
  lift = implementation;
}

/** How a subscribed flow leaves weir for plain RxJS (what `asObservable()` does). */
export type Leave = (input: Flow<unknown>) => Observable<unknown>;

// Registered by sinks/asObservable as it loads, for the same reason as `lift`.
let leave: Leave | undefined;

/** Registers how `Flow.subscribe` leaves weir (sinks/asObservable does, once). Internal: not exported from the package root. */
export function registerLeave(implementation: Leave): void {
  leave = implementation;
}

/**
 * A stream of records in a job's dataflow graph: what `job.source()` returns and weir operators take and give.
 * Like an RxJS Observable it composes with `pipe`; unlike one, it is a description: applying an operator adds a
 * node to the job's graph (as Flink's DataStream API does before `execute()`), and nothing runs until the job
 * starts. RxJS's own operators go in its `pipe` too (see `lift`). Leave weir for plain RxJS by subscribing to it (or
 * with `asObservable()`).
 */
export class Flow<T> {
  /** Phantom field carrying the record type; never set. */
  declare readonly __type?: T;
  /**
   * RxJS's interop point (`from(flow)`, `merge(flow, other$)`, …): the flow's records as an Observable, as
   * `subscribe` gives them. Typed under `Symbol.observable`, which RxJS's types declare; defined below the class
   * under the key RxJS reads at run time (`Symbol.observable` where a polyfill set it, else "@@observable").
   */
  declare [Symbol.observable]: () => Subscribable<T>;

  constructor(
    /** The graph this flow belongs to. */
    readonly graph: JobGraph,
    /** The node whose output this flow is. */
    readonly node: GraphNode,
    /** Records carry event timestamps and watermarks (an `assignTimestamps` or window is upstream). */
    readonly timestamped = false,
  ) {}

  pipe(): this;
  pipe<A>(op1: Step<this, A>): Stepped<A>;
  pipe<A, B>(op1: Step<this, A>, op2: Step<Stepped<A>, B>): Stepped<B>;
  pipe<A, B, C>(op1: Step<this, A>, op2: Step<Stepped<A>, B>, op3: Step<Stepped<B>, C>): Stepped<C>;
  pipe<A, B, C, D>(op1: Step<this, A>, op2: Step<Stepped<A>, B>, op3: Step<Stepped<B>, C>, op4: Step<Stepped<C>, D>): Stepped<D>;
  pipe<A, B, C, D, E>(
    op1: Step<this, A>, op2: Step<Stepped<A>, B>, op3: Step<Stepped<B>, C>, op4: Step<Stepped<C>, D>, op5: Step<Stepped<D>, E>,
  ): Stepped<E>;
  pipe<A, B, C, D, E, F>(
    op1: Step<this, A>, op2: Step<Stepped<A>, B>, op3: Step<Stepped<B>, C>, op4: Step<Stepped<C>, D>, op5: Step<Stepped<D>, E>,
    op6: Step<Stepped<E>, F>,
  ): Stepped<F>;
  pipe<A, B, C, D, E, F, G>(
    op1: Step<this, A>, op2: Step<Stepped<A>, B>, op3: Step<Stepped<B>, C>, op4: Step<Stepped<C>, D>, op5: Step<Stepped<D>, E>,
    op6: Step<Stepped<E>, F>, op7: Step<Stepped<F>, G>,
  ): Stepped<G>;
  pipe<A, B, C, D, E, F, G, H>(
    op1: Step<this, A>, op2: Step<Stepped<A>, B>, op3: Step<Stepped<B>, C>, op4: Step<Stepped<C>, D>, op5: Step<Stepped<D>, E>,
    op6: Step<Stepped<E>, F>, op7: Step<Stepped<F>, G>, op8: Step<Stepped<G>, H>,
  ): Stepped<H>;
  // Nine typed operators, as RxJS's own pipe has: past them the rest overload types the result as unknown.
  pipe<A, B, C, D, E, F, G, H, I>(
    op1: Step<this, A>, op2: Step<Stepped<A>, B>, op3: Step<Stepped<B>, C>, op4: Step<Stepped<C>, D>, op5: Step<Stepped<D>, E>,
    op6: Step<Stepped<E>, F>, op7: Step<Stepped<F>, G>, op8: Step<Stepped<G>, H>, op9: Step<Stepped<H>, I>,
  ): Stepped<I>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the overloads above carry the types
  pipe(...operators: ((input: any) => unknown)[]): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  pipe(...operators: ((input: any) => unknown)[]): unknown {
    return operators.reduce<unknown>((flow, operator) => operator(flow), this);
  }

  /**
   * Leaves weir, as `pipe(asObservable())` does: the flow's records reach `observer` as the job emits them
   * (at-least-once across restarts; it completes when the job ends and errors when it fails for good). A flow is a
   * description, so subscribing adds a sink to the job's graph: subscribe before `job.start()` (after it, a
   * `JobDefinitionError`). Each subscription is a sink of its own.
   * @example
   * words.subscribe((w) => console.log(w));
   * await job.start().done;
   */
  subscribe(observer?: Partial<Observer<T>> | ((value: T) => void)): Subscription {
    if (leave === undefined) {
      throw new JobDefinitionError(`job '${this.graph.jobName}': subscribing needs weir's sinks; import createJob and operators from 'weir'`);
    }
    return (leave(this) as Observable<T>).subscribe(observer);
  }

  /**
   * Applies an RxJS operator to the flow's records: what RxJS 7's operators call on their source (`map`, `filter`,
   * `mergeMap`, `catchError`, … from 'rxjs' in a weir `pipe`), so it is rarely called by hand. Records go through
   * the operator; barriers, watermarks and the end of input go around it. The result is a plain flow even after
   * `keyBy`, since an RxJS operator may change what the key selector reads: a keyed operator after it needs its own
   * `keyBy`.
   * @example flow.pipe(map((n: number) => n * 2)) // map from 'rxjs': RxJS calls flow.lift
   */
  lift<R>(operator: Operator<T, R>): Flow<R> {
    if (lift === undefined) {
      throw new JobDefinitionError(`job '${this.graph.jobName}': RxJS operators need weir's operator runtime; import createJob and operators from 'weir'`);
    }
    return lift(this, operator) as Flow<R>;
  }
}

Object.defineProperty(Flow.prototype, interopKey, {
  value(this: Flow<unknown>): Subscribable<unknown> {
    return this;
  },
});

/** A flow partitioned by key (`keyBy`): keyed operators that follow see one key's state per record. */
export class KeyedFlow<T> extends Flow<T> {
  constructor(graph: JobGraph, node: GraphNode, readonly keySelector: KeySelector<T>, timestamped = false) {
    super(graph, node, timestamped);
  }
}
