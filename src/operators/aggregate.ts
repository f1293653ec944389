import type { Flow, KeyedFlow } from '../core/flow';
import type { AggregateFunction } from '../core/types';
import { aggregatingState } from '../state/descriptors';
import { keyedOperate } from './keyedOperate';
import type { StatefulOperatorOptions } from './reduce';

/**
 * Rolling aggregation per key with a Flink AggregateFunction: records are added to the key's accumulator and
 * `getResult` of it is emitted for every record.
 * @example
 * readings.pipe(keyBy((r) => r.sensor), aggregate({
 *   createAccumulator: () => ({ sum: 0, n: 0 }),
 *   add: (r, acc) => ({ sum: acc.sum + r.value, n: acc.n + 1 }),
 *   getResult: (acc) => acc.sum / acc.n,
 *   merge: (a, b) => ({ sum: a.sum + b.sum, n: a.n + b.n }),
 * }, { uid: 'mean' }))
 */
export function aggregate<T, ACC, R>(
  fn: AggregateFunction<T, ACC, R>,
  options: StatefulOperatorOptions<ACC> = {},
): (input: KeyedFlow<T>) => Flow<R> {
  return (input) =>
    keyedOperate<T, R>(input, 'aggregate', options.uid, (backend, emit) => {
      const state = backend.getState(aggregatingState('aggregate', fn, { serializer: options.serializer }));
      return (value) => {
        state.add(value);
        emit(state.get()!);
      };
    });
}
