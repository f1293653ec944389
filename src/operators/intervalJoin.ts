import { JobDefinitionError } from '../core/errors.js';
import { KeyedFlow, type Flow } from '../core/flow.js';
import type { KeySelector } from '../core/graph.js';
import { mapState } from '../state/descriptors.js';
import { coProcessOperator } from './coProcessInternals.js';

export interface IntervalJoinOptions<A, B, R> {
  /** A right element at `tr` joins a left element at `tl` when `tl + lowerBound <= tr <= tl + upperBound`. */
  lowerBound: number;
  upperBound: number;
  apply(left: A, right: B): R;
  uid?: string;
}

/**
 * Interval join (Flink's `intervalJoin().between()`): pairs elements of two keyed, timestamped flows whose
 * timestamps are within the bounds of each other, as they arrive. Each result carries the larger of the two
 * timestamps. Elements are kept until the watermark passes the last time they could match; elements already
 * behind the watermark are dropped as late.
 * @example intervalJoin(impressions.pipe(keyBy((i) => i.ad)), clicks.pipe(keyBy((c) => c.ad)), { lowerBound: 0, upperBound: 60_000, apply: (i, c) => ({ ad: i.ad, delay: c.ts - i.ts }), uid: 'ctr' })
 */
export function intervalJoin<A, B, R>(left: Flow<A>, right: Flow<B>, options: IntervalJoinOptions<A, B, R>): Flow<R> {
  const { lowerBound, upperBound } = options;
  if (!(left instanceof KeyedFlow) || !(right instanceof KeyedFlow)) {
    throw new JobDefinitionError('intervalJoin: both flows must be keyed (keyBy on each, with keys of the same type)');
  }
  if (!left.timestamped || !right.timestamped) throw new JobDefinitionError('intervalJoin: both flows need event timestamps (assignTimestamps before keyBy)');
  if (!(Number.isFinite(lowerBound) && Number.isFinite(upperBound) && lowerBound <= upperBound)) {
    throw new JobDefinitionError(`intervalJoin: bounds must be finite with lowerBound ≤ upperBound, got [${lowerBound}, ${upperBound}]`);
  }
  const leftBuffer = mapState<number, A[]>('interval-join-left');
  const rightBuffer = mapState<number, B[]>('interval-join-right');
  return coProcessOperator<R>([left as Flow<unknown>, right as Flow<unknown>], {
    kind: 'intervalJoin',
    uid: options.uid,
    keySelectors: [left.keySelector as KeySelector<unknown>, right.keySelector as KeySelector<unknown>],
    states: undefined,
    setup({ task, ctx, emit, backend }) {
      const record = task.record;
      const lefts = backend!.getState(leftBuffer);
      const rights = backend!.getState(rightBuffer);
      const emitPair = (a: A, b: B, timestamp: number) => {
        const previous = record.current;
        record.current = timestamp;
        emit(options.apply(a, b));
        record.current = previous;
      };
      return {
        onRecord(input, value) {
          const timestamp = record.current!;
          if (timestamp < ctx.timers.currentWatermark()) return;
          if (input === 0) {
            lefts.put(timestamp, [...(lefts.get(timestamp) ?? []), value as A]);
            for (const [rightTime, bs] of rights.entries()) {
              if (rightTime >= timestamp + lowerBound && rightTime <= timestamp + upperBound) for (const b of bs) emitPair(value as A, b, Math.max(timestamp, rightTime));
            }
            ctx.timers.registerEventTimeTimer(timestamp + upperBound);
          } else {
            rights.put(timestamp, [...(rights.get(timestamp) ?? []), value as B]);
            for (const [leftTime, as] of lefts.entries()) {
              if (timestamp >= leftTime + lowerBound && timestamp <= leftTime + upperBound) for (const a of as) emitPair(a, value as B, Math.max(timestamp, leftTime));
            }
            ctx.timers.registerEventTimeTimer(timestamp - lowerBound);
          }
        },
        // A timer at `time`: the elements that can no longer match anything are dropped.
        onTimer(time) {
          for (const timestamp of lefts.keys()) if (timestamp + upperBound <= time) lefts.remove(timestamp);
          for (const timestamp of rights.keys()) if (timestamp - lowerBound <= time) rights.remove(timestamp);
        },
      };
    },
  });
}
