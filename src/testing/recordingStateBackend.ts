import type { Key, KeyGroupRange, KeyedStateBackend, StateBackend, StateDescriptor } from '../core/types.js';
import { HarnessInputError } from './harnessErrors.js';

/** One keyed backend the harness's operators created, with the states registered on it so far. */
export interface RecordedBackend {
  readonly uid: string;
  readonly range: KeyGroupRange;
  readonly backend: KeyedStateBackend;
  readonly descriptors: Map<string, StateDescriptor<unknown>>;
}

/**
 * Wraps a state backend so that the harness knows every keyed backend its operators use (one per operator instance)
 * and the descriptors registered on each, to read state by uid, state name and key. Reads and writes go straight to
 * the wrapped backend's objects: the operators run on the real backend.
 */
export function recordingStateBackend(inner: StateBackend, recorded: RecordedBackend[]): StateBackend {
  return {
    name: inner.name,
    createKeyedBackend(options) {
      const descriptors = new Map<string, StateDescriptor<unknown>>();
      const backend = inner.createKeyedBackend({
        ...options,
        onStateRegistered(descriptor) {
          descriptors.set(descriptor.name, descriptor);
          options.onStateRegistered?.(descriptor);
        },
      });
      recorded.push({ uid: options.uid, range: options.keyGroupRange, backend, descriptors });
      return backend;
    },
  };
}

/**
 * What `key` (in key group `group`) holds of a state of operator `uid` in `namespace`, read from the backend that
 * owns the group. The state is named by its descriptor, or by name once the operator has registered it.
 */
export function peekRecordedState<T>(
  recorded: readonly RecordedBackend[],
  group: number,
  uid: string,
  state: StateDescriptor<unknown, T> | string,
  key: Key,
  namespace: string,
): T | undefined {
  const owners = recorded.filter((b) => b.uid === uid);
  if (owners.length === 0) {
    const known = [...new Set(recorded.map((b) => b.uid))];
    throw new HarnessInputError(`state: operator '${uid}' has no keyed state here; keyed operators: ${known.map((u) => `'${u}'`).join(', ') || 'none'}`);
  }
  const owner = owners.find((b) => group >= b.range.start && group <= b.range.end) ?? owners[0]!;
  const descriptor = typeof state === 'string' ? owner.descriptors.get(state) : state;
  if (!descriptor) {
    throw new HarnessInputError(
      `state: operator '${uid}' has not used a state named '${typeof state === 'string' ? state : state.name}' yet (it has: ${[...owner.descriptors.keys()].map((n) => `'${n}'`).join(', ') || 'none'}); pass its descriptor instead`,
    );
  }
  return owner.backend.peek(descriptor as StateDescriptor<unknown, T>, key, namespace);
}
