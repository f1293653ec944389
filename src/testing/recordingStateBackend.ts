import type { KeyGroupRange, KeyedStateBackend, StateBackend, StateDescriptor } from '../core/types.js';

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
