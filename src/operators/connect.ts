import { JobDefinitionError } from '../core/errors.js';
import { Flow, KeyedFlow } from '../core/flow.js';
import type { BroadcastFlow } from './broadcast.js';

type Fn<A, B> = (a: A) => B;

/**
 * Two flows connected for one operator that sees both, each with its own type (Flink's ConnectedStreams): apply
 * `coProcess(…)`, or, with a broadcast flow second, `processBroadcast(…)`. Both flows keyed means shared keyed state:
 * a key's records from either side see the same state.
 */
export class ConnectedFlows<A, B> {
  constructor(
    readonly first: Flow<A>,
    readonly second: Flow<B> | BroadcastFlow<B>,
  ) {}

  pipe<R>(op1: Fn<this, R>): R;
  pipe<R, S>(op1: Fn<this, R>, op2: Fn<R, S>): S;
  pipe<R, S, U>(op1: Fn<this, R>, op2: Fn<R, S>, op3: Fn<S, U>): U;
  pipe<R, S, U, V>(op1: Fn<this, R>, op2: Fn<R, S>, op3: Fn<S, U>, op4: Fn<U, V>): V;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the overloads above carry the types
  pipe(...operators: Fn<any, unknown>[]): unknown {
    return operators.reduce<unknown>((flow, operator) => operator(flow), this);
  }
}

/**
 * Connects two flows of one job.
 * @example connect(orders.pipe(keyBy((o) => o.id)), payments.pipe(keyBy((p) => p.order))).pipe(coProcess(matcher, { uid: 'match' }))
 */
export function connect<A, B>(first: Flow<A>, second: Flow<B> | BroadcastFlow<B>): ConnectedFlows<A, B> {
  const secondFlow = 'flow' in second ? second.flow : second;
  if (first.graph !== secondFlow.graph) throw new JobDefinitionError('connect: the two flows belong to different jobs; flows cannot cross jobs');
  if ('flow' in second) {
    if (!(first instanceof KeyedFlow)) throw new JobDefinitionError('connect: a broadcast flow connects to a keyed flow; put keyBy on the first flow');
  } else if ((first instanceof KeyedFlow) !== (second instanceof KeyedFlow)) {
    throw new JobDefinitionError('connect: key both flows (keyBy on each, with keys of the same type) or neither');
  }
  return new ConnectedFlows(first, second);
}
