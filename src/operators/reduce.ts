import type { Flow, KeyedFlow } from '../core/flow.js';
import type { Serializer } from '../core/types.js';
import { reducingState, valueState } from '../state/descriptors.js';
import type { ProcessWindowFunction } from '../windows/windowFunction.js';
import { WindowedFlow } from '../windows/windowedFlow.js';
import { rejectWindowOnly, rejectWindowQueryable } from '../windows/windowOnlyOptions.js';
import { keyedOperate } from './keyedOperate.js';
import { checkOptions } from '../core/checkOptions.js';

export interface StatefulOperatorOptions<S> {
  /** Identifies the operator's state in checkpoints; keep it stable across versions of the job. */
  uid?: string;
  /** How the operator's state is written in snapshots (`autoSerializer()` by default). */
  serializer?: Serializer<S>;
  /** Parallel instances, each owning a range of key groups (the job's `parallelism` by default). */
  parallelism?: number;
  /**
   * Makes the rolling state queryable under this name (Flink's `asQueryableState`): `running.query(name, key)` and
   * the queryable state server answer with the key's current reduction (for `aggregate`, its result), from the
   * moment the job runs. Not after `window(…)`, whose state lives per window.
   */
  queryable?: string;
}

/** The names `StatefulOperatorOptions` takes (checked in plain JS too). */
export const STATEFUL_OPERATOR_OPTIONS = ['uid', 'serializer', 'parallelism', 'queryable'];

/** Options of window functions: a ProcessWindowFunction that receives the pre-aggregated result with its window. */
export interface WindowFunctionOptions<A, R> {
  process?: ProcessWindowFunction<A, R>;
}

/**
 * Rolling reduce per key (Flink's `KeyedStream.reduce`): combines each record with the key's reduction so far and
 * emits the new reduction. This is RxJS's `scan` run per key, not RxJS's `reduce` (which emits once, when its input
 * completes); `rxjs`'s own `reduce` also works in a weir pipe and keeps that meaning. The first record of a key is emitted as it is. After `window(…)`, reduces each window
 * incrementally and emits one result per firing (through `process`, if given). The reducer may return a new value or
 * change `accumulated` in place and return it: while a checkpoint is being written, the value it holds is copied
 * before the reducer sees it.
 * @example clicks.pipe(keyBy((c) => c.user), reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'per-user' }))
 */
export function reduce<T, R = T>(
  reducer: (accumulated: T, value: T) => T,
  options: StatefulOperatorOptions<T> & WindowFunctionOptions<T, R> = {},
): (input: KeyedFlow<T>) => Flow<R> {
  checkOptions('reduce', options, [...STATEFUL_OPERATOR_OPTIONS, 'process']);
  return (input) => {
    if (input instanceof WindowedFlow) {
      rejectWindowQueryable('reduce', options.queryable);
      const descriptor = reducingState('window-contents', reducer, { serializer: options.serializer });
      const contents = {
        name: 'reduce',
        incremental: { descriptor },
        slicing: {
          descriptor,
          accumulate: (partial: unknown, value: T) => (partial === undefined ? value : reducer(partial as T, value)),
          // A partial reduction is a value like the records: the reducing state reduces it in as one.
          toAdd: (partial: unknown) => partial as T,
          merge: reducer as (a: unknown, b: unknown) => unknown,
          result: (merged: unknown) => merged,
        },
        fromElements: (elements: T[]) => [elements.reduce(reducer)],
      };
      return input.window.apply<T, R>(input as WindowedFlow<T>, 'reduce', options.uid, contents, options.process, options.parallelism);
    }
    rejectWindowOnly('reduce', options.process);
    return keyedOperate<T, R>(input, 'reduce', options.uid, (backend, emit) => {
      // Not `immutable`: a reducer may change `accumulated` in place and return it (as with RxJS's `scan`), and a
      // snapshot still holding the value must not see that, so reads copy while one is pending (Flink's heap backend
      // copies on access too, for any type whose serializer is not immutable).
      const state = backend.getState(valueState<T>('reduce', { serializer: options.serializer, queryable: options.queryable }));
      return (value) => {
        const current = state.value();
        const next = current === undefined ? value : reducer(current, value);
        state.update(next);
        emit(next as unknown as R);
      };
    }, { parallelism: options.parallelism });
  };
}
