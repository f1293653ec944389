import { NoKeyedContextError, NullStateValueError, StateDescriptorConflictError, StateMigrationError } from '../core/errors';
import type { Key, StateDescriptor, StateMeta } from '../core/types';

/**
 * The checks every keyed state backend makes the same way, so that heap and LMDB state fail alike: no current key,
 * null values, a state name registered twice differently, a restored state read under another kind or serializer.
 */

export function requireKey(key: Key | undefined, stateName: string): Key {
  if (key === undefined) {
    throw new NoKeyedContextError(
      `state '${stateName}' was used where no key is current; keyed state is only available inside a keyed operator ` +
        '(after keyBy) while it processes a record or a timer',
    );
  }
  return key;
}

export function rejectNull(value: unknown, stateName: string, what: string): void {
  if (value === null || value === undefined) {
    throw new NullStateValueError(`state '${stateName}': ${what} ${String(value)}; clear() the state instead of adding nothing`);
  }
}

export function describe(descriptor: StateDescriptor<unknown>): string {
  return `${descriptor.kind} state with serializer '${descriptor.serializer.id}'`;
}

/** What a snapshot records about a state, so that a restore can check it against the descriptor reading it. */
export function metaOf(descriptor: StateDescriptor<unknown>): StateMeta {
  const { name, kind, serializer } = descriptor;
  return { name, kind, serializer: serializer.id, serializerVersion: serializer.version };
}

/** Two descriptors of one name within an operator must agree on kind and serializer. */
export function checkSameRegistration(uid: string, was: StateDescriptor<unknown>, descriptor: StateDescriptor<unknown>): void {
  if (was.kind !== descriptor.kind || was.serializer.id !== descriptor.serializer.id) {
    throw new StateDescriptorConflictError(
      `operator '${uid}': state '${descriptor.name}' is already registered as ${describe(was)}, ` +
        `not ${describe(descriptor)}; give the second state another name`,
    );
  }
}

/** Restored state is read only by a descriptor of the kind and serializer it was saved with. */
export function checkRestoredMeta(uid: string, meta: StateMeta, descriptor: StateDescriptor<unknown>): void {
  if (meta.kind !== descriptor.kind || meta.serializer !== descriptor.serializer.id) {
    throw new StateMigrationError(
      `operator '${uid}': state '${descriptor.name}' was saved as ${meta.kind} state with serializer '${meta.serializer}' ` +
        `but is now read as ${describe(descriptor)}; keep the old kind and serializer, or use another state name`,
    );
  }
}

/** A snapshot entry pointing at a state its snapshot does not declare. */
export function undeclaredState(uid: string, index: number): StateMigrationError {
  return new StateMigrationError(`operator '${uid}': a snapshot entry names state #${index}, which the snapshot does not declare`);
}
