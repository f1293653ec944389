import type { Flow, KeyedFlow } from '../core/flow.js';
import type { AggregateFunction } from '../core/types.js';
import { aggregatingState } from '../state/descriptors.js';
import { copyValue } from '../state/copyValue.js';
import { WindowedFlow } from '../windows/windowedFlow.js';
import { rejectWindowOnly, rejectWindowQueryable } from '../windows/windowOnlyOptions.js';
import { keyedOperate } from './keyedOperate.js';
import { STATEFUL_OPERATOR_OPTIONS, type StatefulOperatorOptions, type WindowFunctionOptions } from './reduce.js';
import { checkOptions } from '../core/checkOptions.js';

/** An accumulator the window operator combined records into, added to a slice's state as one (merged, not added). */
class PartialAccumulator<ACC> {
  constructor(readonly accumulator: ACC) {}
}

/**
 * Rolling aggregation per key with a Flink AggregateFunction: records are added to the key's accumulator and
 * `getResult` of it is emitted for every record. After `window(…)`, aggregates each window incrementally and emits
 * one result per firing (through `process`, if given).
 * @example
 * readings.pipe(keyBy((r) => r.sensor), aggregate({
 *   createAccumulator: () => ({ sum: 0, n: 0 }),
 *   add: (r, acc) => ({ sum: acc.sum + r.value, n: acc.n + 1 }),
 *   getResult: (acc) => acc.sum / acc.n,
 *   merge: (a, b) => ({ sum: a.sum + b.sum, n: a.n + b.n }),
 * }, { uid: 'mean' }))
 */
export function aggregate<T, ACC, R, OUT = R>(
  fn: AggregateFunction<T, ACC, R>,
  options: StatefulOperatorOptions<ACC> & WindowFunctionOptions<R, OUT> = {},
): (input: KeyedFlow<T>) => Flow<OUT> {
  checkOptions('aggregate', options, [...STATEFUL_OPERATOR_OPTIONS, 'process']);
  return (input) => {
    if (input instanceof WindowedFlow) {
      rejectWindowQueryable('aggregate', options.queryable);
      const contents = {
        name: 'aggregate',
        incremental: { descriptor: aggregatingState('window-contents', fn, { serializer: options.serializer }) },
        // Slices keep accumulators as the window state does (same name, kind and serializer), read raw to merge them.
        slicing: {
          descriptor: aggregatingState<T | PartialAccumulator<ACC>, ACC, ACC>(
            'window-contents',
            {
              createAccumulator: () => fn.createAccumulator(),
              add: (value, acc) => (value instanceof PartialAccumulator ? fn.merge(acc, value.accumulator) : fn.add(value, acc)),
              getResult: (acc) => acc,
              merge: (a, b) => fn.merge(a, b),
            },
            { serializer: options.serializer },
          ),
          accumulate: (partial: unknown, value: T) => fn.add(value, partial === undefined ? fn.createAccumulator() : (partial as ACC)),
          toAdd: (partial: unknown) => new PartialAccumulator(partial as ACC) as never,
          // Flink's merge may reuse either accumulator: the slice's one is copied so that it stays as it is.
          merge: (a: unknown, b: unknown) => fn.merge(a as ACC, copyValue(b as ACC)),
          result: (merged: unknown) => fn.getResult(merged as ACC),
        },
        fromElements: (elements: T[]) => [fn.getResult(elements.reduce((acc, value) => fn.add(value, acc), fn.createAccumulator()))],
      };
      return input.window.apply<T, OUT>(input as WindowedFlow<T>, 'aggregate', options.uid, contents, options.process, options.parallelism);
    }
    rejectWindowOnly('aggregate', options.process);
    return keyedOperate<T, OUT>(input, 'aggregate', options.uid, (backend, emit) => {
      const state = backend.getState(aggregatingState('aggregate', fn, { serializer: options.serializer, queryable: options.queryable }));
      return (value) => {
        state.add(value);
        emit(state.get()! as unknown as OUT);
      };
    }, { parallelism: options.parallelism });
  };
}
