import type { Flow, KeyedFlow } from '../core/flow';
import type { Serializer } from '../core/types';
import { valueState } from '../state/descriptors';
import { keyedOperate } from './keyedOperate';

export interface StatefulOperatorOptions<S> {
  /** Identifies the operator's state in checkpoints; keep it stable across versions of the job. */
  uid?: string;
  /** How the operator's state is written in snapshots (`autoSerializer()` by default). */
  serializer?: Serializer<S>;
}

/**
 * Rolling reduce per key (Flink's `KeyedStream.reduce`): combines each record with the key's reduction so far and
 * emits the new reduction. The first record of a key is emitted as it is.
 * @example clicks.pipe(keyBy((c) => c.user), reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'per-user' }))
 */
export function reduce<T>(reducer: (accumulated: T, value: T) => T, options: StatefulOperatorOptions<T> = {}): (input: KeyedFlow<T>) => Flow<T> {
  return (input) =>
    keyedOperate<T, T>(input, 'reduce', options.uid, (backend, emit) => {
      const state = backend.getState(valueState<T>('reduce', { serializer: options.serializer }));
      return (value) => {
        const current = state.value();
        const next = current === undefined ? value : reducer(current, value);
        state.update(next);
        emit(next);
      };
    });
}
