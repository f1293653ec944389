import type { Flow } from '../core/flow.js';
import { LATE_DATA } from '../windows/lateData.js';
import { operate } from './operate.js';

/** Names a side output of a process function: `out.side(tag, value)` writes to it, `sideOutput(tag)` reads it. */
export interface OutputTag<T> {
  readonly id: string;
  /** Phantom field carrying the record type; never set. */
  readonly __type?: T;
}

/**
 * Creates a side output tag.
 * @example const rejected = outputTag<Tx>('rejected');
 */
export function outputTag<T>(id: string): OutputTag<T> {
  return { id };
}

/**
 * The records an operator sent to a side output, as a flow of their own (Flink's `getSideOutput`). Apply it to the
 * flow the operator returned.
 * @example
 * const valid = txs.pipe(process({ onElement(t, _ctx, out) { if (t.amount < 0) out.side(rejected, t); else out.emit(t); } }, { uid: 'check' }));
 * valid.pipe(sideOutput(rejected), toFile('rejected.jsonl', { uid: 'rejected-out' }));
 */
export function sideOutput<T>(tag: OutputTag<T> | string): (input: Flow<unknown>) => Flow<T> {
  const id = typeof tag === 'string' ? tag : tag.id;
  return (input) =>
    operate<unknown, T>(input, {
      kind: `side-${id}`,
      timestamped: input.timestamped,
      setup: (task, emit) => ({
        onRecord: () => undefined,
        onSideOutput(element) {
          if (element.tag !== id) return;
          task.record.current = element.timestamp;
          emit(element.value as T);
        },
      }),
    });
}

/**
 * Records that arrived too late for any window (past `allowedLateness`), from the flow a window function returned.
 * Without a `lateData()` reader they are dropped, as in Flink.
 * @example
 * const perMinute = keyed.pipe(window(tumbling(60_000), { allowedLateness: 10_000 }), reduce(sum, { uid: 'sum' }));
 * perMinute.pipe(lateData(), toFile('late.jsonl', { uid: 'late-out' }));
 */
export function lateData<T>(): (input: Flow<unknown>) => Flow<T> {
  return sideOutput<T>(LATE_DATA);
}
