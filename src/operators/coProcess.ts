import { KeyedFlow, type Flow } from '../core/flow.js';
import type { KeySelector } from '../core/graph.js';
import type { ConnectedFlows } from './connect.js';
import { coProcessOperator } from './coProcessInternals.js';
import { checkStates } from './keyedOperate.js';
import type { Output, ProcessContext, ProcessOptions, TimerContext } from './processFunction.js';

/** Flink's (Keyed)CoProcessFunction: one method per input, sharing keyed state and timers. */
export interface CoProcessFunction<A, B, R> {
  onElement1(value: A, ctx: ProcessContext, out: Output<R>): void;
  onElement2(value: B, ctx: ProcessContext, out: Output<R>): void;
  onTimer?(time: number, ctx: TimerContext, out: Output<R>): void;
}

/**
 * Processes two connected flows with one function. On keyed flows, `ctx.state` is the key's state, shared by both
 * inputs, and `ctx.timers` registers timers for the key.
 * @example
 * const seen = valueState<boolean>('seen');
 * connect(controls.pipe(keyBy((c) => c.word)), words.pipe(keyBy((w) => w))).pipe(coProcess({
 *   onElement1(_c, ctx) { ctx.state(seen).update(true); },
 *   onElement2(w, ctx, out) { if (!ctx.state(seen).value()) out.emit(w); },
 * }, { uid: 'filter-words' }))
 */
export function coProcess<A, B, R>(fn: CoProcessFunction<A, B, R>, options: Pick<ProcessOptions, 'uid' | 'states'> = {}): (connected: ConnectedFlows<A, B>) => Flow<R> {
  return (connected) => {
    const { first, second } = connected;
    const secondFlow = second as Flow<B>;
    const keySelectors =
      first instanceof KeyedFlow ? [first.keySelector as KeySelector<unknown>, (secondFlow as KeyedFlow<B>).keySelector as KeySelector<unknown>] : undefined;
    return coProcessOperator<R>([first, secondFlow], {
      kind: 'coProcess',
      uid: options.uid,
      keySelectors,
      states: checkStates('coProcess', options.states, keySelectors !== undefined),
      setup: ({ ctx, out }) => ({
        onRecord(input, value) {
          if (input === 0) fn.onElement1(value as A, ctx, out);
          else fn.onElement2(value as B, ctx, out);
        },
        onTimer: (time, timerCtx, timerOut) => fn.onTimer?.(time, timerCtx, timerOut),
      }),
    });
  };
}
