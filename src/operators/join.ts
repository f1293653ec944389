import { JobDefinitionError } from '../core/errors.js';
import { KeyedFlow, type Flow } from '../core/flow.js';
import type { Key } from '../core/types.js';
import { window, type WindowOptions } from '../windows/window.js';
import type { WindowAssigner } from '../windows/windowTypes.js';
import { keyBy } from './keyBy.js';
import { operateMulti } from './operateMulti.js';
import { process } from './process.js';
import { joinsAtWindowEnd, windowJoinOperator, type Tagged } from './windowJoinOperator.js';

export interface JoinOptions<A, B, R> extends WindowOptions {
  /** Windows the two flows are joined in; elements of one key in one window are paired. */
  window: WindowAssigner;
  /** Builds one result per pair. */
  apply(left: A, right: B): R;
  uid?: string;
}

/**
 * Windowed join (Flink's `join().where().equalTo().window().apply()`): every pair of a left and a right element with
 * the same key in the same window gives one result, emitted when the window fires.
 * @example join(orders.pipe(keyBy((o) => o.user)), clicks.pipe(keyBy((c) => c.user)), { window: tumbling(60_000), apply: (o, c) => ({ ...o, page: c.page }), uid: 'orders-clicks' })
 */
export function join<A, B, R>(left: Flow<A>, right: Flow<B>, options: JoinOptions<A, B, R>): Flow<R> {
  if (!(left instanceof KeyedFlow) || !(right instanceof KeyedFlow)) {
    throw new JobDefinitionError('join: both flows must be keyed (keyBy on each, with keys of the same type)');
  }
  const leftKey = left.keySelector;
  const rightKey = right.keySelector;
  const uid = options.uid;
  // A join is a window over the union of both sides, tagged, whose window function pairs them: the same pieces,
  // so the same checkpointing, lateness and timestamps as any window. The union tags each record with the input it
  // came from, instead of a map per side before it: two operators less on every record's and watermark's way.
  const tagged = operateMulti<Tagged<A, B>>([left, right], {
    kind: 'union',
    uid: uid && `${uid}-inputs`,
    setup: (_task, emit) => ({ onRecord: (side, value) => emit({ side, value } as Tagged<A, B>) }),
  });
  const windowed = tagged.pipe(
    keyBy((t: Tagged<A, B>): Key => (t.side === 0 ? leftKey(t.value) : rightKey(t.value))),
    window(options.window, { trigger: options.trigger, allowedLateness: options.allowedLateness }),
  );
  // Windows that fire once, at their end, and are dropped then need no trigger, timer or state write per record.
  if (joinsAtWindowEnd(windowed.window)) return windowJoinOperator(windowed, (a: A, b: B) => options.apply(a, b), uid);
  return windowed.pipe(
    process<Tagged<A, B>, R>(
      {
        process(_key, _ctx, elements, out) {
          const lefts: A[] = [];
          const rights: B[] = [];
          for (const element of elements) {
            if (element.side === 0) lefts.push(element.value);
            else rights.push(element.value);
          }
          for (const a of lefts) for (const b of rights) out.emit(options.apply(a, b));
        },
      },
      { uid },
    ),
  );
}
