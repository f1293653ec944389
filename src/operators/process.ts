import { Flow, KeyedFlow } from '../core/flow';
import { NoKeyedContextError } from '../core/errors';
import type { Key, KeyedStateBackend, StateDescriptor } from '../core/types';
import { keyedOperate } from './keyedOperate';
import { operate } from './operate';

/** What a process function sees besides the record. */
export interface ProcessContext {
  /** The current record's key (undefined on a flow that is not keyed). */
  readonly key: Key | undefined;
  /** The keyed state for a descriptor, scoped to the current key. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  state<S>(descriptor: StateDescriptor<S, any>): S;
}

/** Sends records downstream. */
export interface Output<R> {
  emit(value: R): void;
}

/** Flink's (Keyed)ProcessFunction: full control over each record, with keyed state. */
export interface ProcessFunction<T, R> {
  onElement(value: T, ctx: ProcessContext, out: Output<R>): void;
}

/**
 * The lowest-level operator: calls `onElement` for every record with the key's state at hand, and emits whatever
 * the function sends to `out`. After `keyBy` its state is per key; on other flows `ctx.state` is not available.
 * @example
 * const count = valueState<number>('count', { default: 0 });
 * clicks.pipe(keyBy((c) => c.user), process({
 *   onElement(c, ctx, out) {
 *     const n = ctx.state(count).value()! + 1;
 *     ctx.state(count).update(n);
 *     if (n === 100) out.emit({ user: c.user, milestone: n });
 *   },
 * }, { uid: 'milestones' }))
 */
export function process<T, R>(fn: ProcessFunction<T, R>, options: { uid?: string } = {}): (input: Flow<T>) => Flow<R> {
  return (input) => {
    if (input instanceof KeyedFlow) {
      return keyedOperate<T, R>(input, 'process', options.uid, (backend, emit) => {
        const { ctx, out } = contexts(backend, emit);
        return (value) => fn.onElement(value, ctx, out);
      });
    }
    return operate<T, R>(input, {
      kind: 'process',
      uid: options.uid,
      setup(task, emit) {
        const { ctx, out } = contexts(undefined, emit, task.uid);
        return { onRecord: (value) => fn.onElement(value, ctx, out) };
      },
    });
  };
}

/** One context and collector per operator instance, reused for every record (no allocation per record). */
function contexts<R>(backend: KeyedStateBackend | undefined, emit: (value: R) => void, uid?: string): { ctx: ProcessContext; out: Output<R> } {
  const ctx: ProcessContext = {
    get key() {
      return backend?.getCurrentKey();
    },
    state<S>(descriptor: StateDescriptor<S, unknown>): S {
      if (!backend) {
        throw new NoKeyedContextError(
          `operator '${uid}': state '${descriptor.name}' is keyed state, but this process function is not on a keyed flow; put keyBy before it`,
        );
      }
      return backend.getState(descriptor);
    },
  };
  return { ctx, out: { emit } };
}
