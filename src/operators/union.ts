import type { Flow } from '../core/flow.js';
import { operateMulti } from './operateMulti.js';

/**
 * Merges flows of one type into one (Flink's `union`): records in arrival order, the watermark is the minimum of
 * the inputs' (idle inputs aside), and checkpoint barriers are aligned across inputs.
 * @example union(webClicks, appClicks).pipe(keyBy((c) => c.user), reduce(add, { uid: 'per-user' }))
 */
export function union<T>(...flows: Flow<T>[]): Flow<T> {
  return unionWith<T>({}, ...flows);
}

/** `union` with a uid (its state is the records in flight of unaligned checkpoints). */
export function unionWith<T>(options: { uid?: string }, ...flows: Flow<T>[]): Flow<T> {
  return operateMulti<T>(flows, {
    kind: 'union',
    uid: options.uid,
    setup: (_task, emit) => ({ onRecord: (_input, value) => emit(value as T) }),
  });
}
