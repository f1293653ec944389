import type { Flow, KeyedFlow } from '../core/flow.js';
import { copyValue } from '../state/copyValue.js';
import { valueState } from '../state/descriptors.js';
import { JobDefinitionError } from '../core/errors.js';
import { WindowedFlow } from '../windows/windowedFlow.js';
import { keyedOperate } from './keyedOperate.js';
import { STATEFUL_OPERATOR_OPTIONS, type StatefulOperatorOptions } from './reduce.js';
import { checkOptions } from '../core/checkOptions.js';

/**
 * Rolling fold per key from a seed (RxJS `scan`, per key): each key starts from its own copy of `seed`, and every
 * record emits the key's new accumulator.
 * @example clicks.pipe(keyBy((c) => c.user), fold({ n: 0, ms: 0 }, (acc, c) => ({ n: acc.n + 1, ms: acc.ms + c.ms }), { uid: 'totals' }))
 */
export function fold<T, A>(seed: A, folder: (accumulator: A, value: T) => A, options: StatefulOperatorOptions<A> = {}): (input: KeyedFlow<T>) => Flow<A> {
  checkOptions('fold', options, STATEFUL_OPERATOR_OPTIONS);
  return (input) => {
    if (input instanceof WindowedFlow) throw new JobDefinitionError('fold after window(…) is not supported (Flink removed window folds); use aggregate');
    return keyedOperate<T, A>(input, 'fold', options.uid, (backend, emit) => {
      const state = backend.getState(valueState<A>('fold', { serializer: options.serializer, queryable: options.queryable }));
      return (value) => {
        const current = state.value();
        const next = folder(current === undefined ? copyValue(seed) : current, value);
        state.update(next);
        emit(next);
      };
    }, { parallelism: options.parallelism });
  };
}
