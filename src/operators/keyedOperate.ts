import type { Flow } from '../core/flow';
import type { TaskContext } from '../core/graph';
import type { KeyedStateBackend } from '../core/types';
import { checkKey } from '../state/keyCodec';
import { operate, requireKeyed } from './operate';

/**
 * Adds a keyed, stateful operator: for each record it extracts the key once, makes it current in the state
 * backend, then calls `onRecord`; on a barrier it snapshots the backend. Shared by reduce, fold, aggregate and
 * process so that key handling and snapshotting live in one place.
 */
export function keyedOperate<T, R>(
  input: Flow<T>,
  kind: string,
  uid: string | undefined,
  setup: (backend: KeyedStateBackend, emit: (value: R) => void, task: TaskContext) => (value: T) => void,
): Flow<R> {
  const selectKey = requireKeyed(input, kind).keySelector;
  return operate<T, R>(input, {
    kind,
    uid,
    stateful: true,
    setup(task, emit) {
      const backend = task.keyedBackend();
      const onRecord = setup(backend, emit, task);
      return {
        onRecord(value) {
          const key = selectKey(value);
          // Strings are the common case; anything else is checked (objects would compare by identity).
          if (typeof key !== 'string') checkKey(key, task.uid);
          backend.setCurrentKey(key);
          onRecord(value);
        },
        onBarrier(barrier, forward) {
          task.snapshot(barrier, { keyed: backend.snapshot() }, forward);
        },
      };
    },
  });
}
