import type { Flow } from '../core/flow';
import type { TaskContext } from '../core/graph';
import type { Json, KeyedStateBackend } from '../core/types';
import { checkKey } from '../state/keyCodec';
import { operate, requireKeyed, type OperatorHandler } from './operate';

/** A keyed operator's handler: `onRecord` runs with the record's key current; operator state joins the snapshot. */
export type KeyedHandler<T> = Omit<OperatorHandler<T>, 'onBarrier'> & {
  /** Non-keyed state to save with the keyed state (timers, watermark), captured synchronously at the barrier. */
  snapshotOperatorState?(): Json;
};

/**
 * Adds a keyed, stateful operator: for each record it extracts the key once, makes it current in the state
 * backend, then calls `onRecord`; on a barrier it snapshots the backend. Shared by reduce, fold, aggregate, process
 * and windows so that key handling and snapshotting live in one place.
 */
export function keyedOperate<T, R>(
  input: Flow<T>,
  kind: string,
  uid: string | undefined,
  setup: (
    backend: KeyedStateBackend,
    emit: (value: R) => void,
    task: TaskContext,
    fail: (error: unknown) => void,
  ) => ((value: T) => void) | KeyedHandler<T>,
  options: { timestamped?: boolean } = {},
): Flow<R> {
  const selectKey = requireKeyed(input, kind).keySelector;
  return operate<T, R>(input, {
    kind,
    uid,
    stateful: true,
    timestamped: options.timestamped,
    setup(task, emit, fail) {
      const backend = task.keyedBackend();
      const made = setup(backend, emit, task, fail);
      const handler: KeyedHandler<T> = typeof made === 'function' ? { onRecord: made } : made;
      const onRecord = handler.onRecord;
      return {
        ...handler,
        onRecord(value) {
          const key = selectKey(value);
          // Strings are the common case; anything else is checked (objects would compare by identity).
          if (typeof key !== 'string') checkKey(key, task.uid);
          backend.setCurrentKey(key);
          onRecord(value);
        },
        onBarrier(barrier, forward) {
          task.snapshot(barrier, () => ({ keyed: backend.snapshot(), operator: handler.snapshotOperatorState?.() }), forward);
        },
      };
    },
  });
}
