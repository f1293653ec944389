import { CheckpointCorruptedError, NoKeyedContextError, NullStateValueError, StateDescriptorConflictError, StateMigrationError, WeirError } from '../core/errors.js';
import type { Key, Serializer, StateDescriptor, StateMeta } from '../core/types.js';

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

/**
 * The elements of a bulk list write (`addAll`, `update`), each checked before any is written, so that a rejected
 * call changes nothing. An array is checked in place, not copied; any other iterable may be readable only once,
 * so it is read into one array. Callers copy an array they keep (it is the caller's).
 */
export function checkedElements<T>(values: Iterable<T>, stateName: string, call: string): readonly T[] {
  const list = Array.isArray(values) ? (values as readonly T[]) : Array.from(values);
  for (let i = 0; i < list.length; i++) {
    const value = list[i];
    if (value === null || value === undefined) {
      throw new NullStateValueError(
        `state '${stateName}': ${call} was given ${String(value)} at index ${i}, so nothing was written; ` +
          'leave null and undefined out (clear() the state to empty it)',
      );
    }
  }
  return list;
}

/** The entries of `putAll`, each checked before any is written (see `checkedElements`); a Map is checked in place. */
export function checkedEntries<K, V>(entries: Iterable<readonly [K, V]> | Map<K, V>, stateName: string): ReadonlyMap<K, V> | readonly (readonly [K, V])[] {
  if (entries instanceof Map) {
    entries.forEach((value, key) => {
      if (value === undefined) throw undefinedEntry(stateName, key);
    });
    return entries;
  }
  const list = Array.isArray(entries) ? (entries as readonly (readonly [K, V])[]) : Array.from(entries);
  for (let i = 0; i < list.length; i++) if (list[i]![1] === undefined) throw undefinedEntry(stateName, list[i]![0]);
  return list;
}

function undefinedEntry(stateName: string, key: unknown): NullStateValueError {
  return new NullStateValueError(
    `state '${stateName}': putAll was given undefined for map key ${String(key)}, so nothing was written; ` +
      'leave the entry out, or remove(key) to delete it',
  );
}

export function describe(descriptor: StateDescriptor<unknown>): string {
  return `${descriptor.kind} state with serializer '${descriptor.serializer.id}'`;
}

/** What a snapshot records about a state, so that a restore can check it against the descriptor reading it. */
export function metaOf(descriptor: StateDescriptor<unknown>): StateMeta {
  const { name, kind, serializer, version, ttl } = descriptor;
  const meta: StateMeta = { name, kind, serializer: serializer.id, serializerVersion: serializer.version };
  const versioned = version === undefined || version === 1 ? meta : { ...meta, version };
  return ttl === undefined ? versioned : { ...versioned, ttl: true };
}

const withTtl = (ttl: boolean) => (ttl ? 'with a TTL' : 'without a TTL');

/** Two descriptors of one name within an operator must agree on kind and serializer. */
export function checkSameRegistration(uid: string, was: StateDescriptor<unknown>, descriptor: StateDescriptor<unknown>): void {
  if (was.kind !== descriptor.kind || was.serializer.id !== descriptor.serializer.id) {
    throw new StateDescriptorConflictError(
      `operator '${uid}': state '${descriptor.name}' is already registered as ${describe(was)}, ` +
        `not ${describe(descriptor)}; give the second state another name`,
    );
  }
  if ((was.ttl === undefined) !== (descriptor.ttl === undefined)) {
    throw new StateDescriptorConflictError(
      `operator '${uid}': state '${descriptor.name}' is already registered ${withTtl(was.ttl !== undefined)}, ` +
        `not ${withTtl(descriptor.ttl !== undefined)}; give the second state another name`,
    );
  }
}

/**
 * Restored state is read only by a descriptor of the kind and serializer it was saved with, and of the same or a
 * newer schema version (older values are migrated, see `restoredDecoder`).
 */
export function checkRestoredMeta(uid: string, meta: StateMeta, descriptor: StateDescriptor<unknown>): void {
  // Values saved with TTL timestamps cannot be read as plain ones, nor the other way round (as in Flink).
  if ((meta.ttl === true) !== (descriptor.ttl !== undefined)) {
    throw new StateMigrationError(
      `operator '${uid}': state '${descriptor.name}' was saved ${withTtl(meta.ttl === true)} but is now read ${withTtl(descriptor.ttl !== undefined)}; ` +
        'TTL cannot be switched on or off for saved state: keep the ttl option as it was, or use another state name',
    );
  }
  if (meta.kind !== descriptor.kind || meta.serializer !== descriptor.serializer.id) {
    throw new StateMigrationError(
      `operator '${uid}': state '${descriptor.name}' was saved as ${meta.kind} state with serializer '${meta.serializer}' ` +
        `but is now read as ${describe(descriptor)}; keep the old kind and serializer, or use another state name`,
    );
  }
  const saved = meta.version ?? 1;
  const current = descriptor.version ?? 1;
  if (saved > current) {
    throw new StateMigrationError(
      `operator '${uid}': state '${descriptor.name}' was saved with version ${saved}, newer than this job's version ${current}; ` +
        'restore it with the code that wrote it (or newer)',
    );
  }
  if (saved < current && descriptor.migrate === undefined) {
    throw new StateMigrationError(
      `operator '${uid}': state '${descriptor.name}' was saved with version ${saved} and is now read as version ${current}, ` +
        'but the descriptor has no migrate(value, fromVersion); add one to turn old values into the new shape',
    );
  }
}

/** Whether restored values of `meta` must go through the descriptor's `migrate` (checked by `checkRestoredMeta`). */
export function needsMigration(meta: StateMeta, descriptor: StateDescriptor<unknown>): boolean {
  return (meta.version ?? 1) < (descriptor.version ?? 1);
}

/**
 * Whether a restored value that is a plain object of primitive fields (built from a row, see `rowEntriesFrom`) decodes
 * to itself: the descriptor's serializer keeps plain values as they are and no migration applies.
 */
export function plainValuesAsIs(meta: StateMeta, descriptor: StateDescriptor<unknown>): boolean {
  return descriptor.serializer.plainAsIs === true && !needsMigration(meta, descriptor);
}

/**
 * Decodes a restored value with the serializer version it was written with and, when it was saved under an older
 * schema version, migrates it (each element of a list, each value of a map) with the descriptor's `migrate`.
 */
export function restoredDecoder(meta: StateMeta, descriptor: StateDescriptor<unknown>): (encoded: unknown) => unknown {
  const { serializer, migrate, kind } = descriptor;
  const decode = (encoded: unknown) => decodeRestored(serializer, encoded, meta);
  if (!needsMigration(meta, descriptor)) return decode;
  const from = meta.version ?? 1;
  const up = (value: unknown) => migrate!(value, from);
  switch (kind) {
    case 'list':
      return (encoded) => (decode(encoded) as unknown[]).map(up);
    case 'map':
      return (encoded) => new Map(Array.from(decode(encoded) as Map<unknown, unknown>, ([key, value]) => [key, up(value)]));
    default:
      return (encoded) => up(decode(encoded));
  }
}

/**
 * Decodes one restored value. A value its serializer cannot take (a damaged or foreign file that passed its checksum)
 * is a `CheckpointCorruptedError` naming the state, not whatever the serializer threw (a TypeError, say).
 */
export function decodeRestored(serializer: Serializer<unknown>, encoded: unknown, meta: StateMeta): unknown {
  try {
    return serializer.decode(encoded, meta.serializerVersion);
  } catch (error) {
    if (error instanceof WeirError) throw error;
    throw new CheckpointCorruptedError(
      `state '${meta.name}': a saved value cannot be decoded with serializer '${serializer.id}' (version ${meta.serializerVersion}): ` +
        `${String((error as Error)?.message ?? error).slice(0, 200)}; the checkpoint is damaged or was written by other code — restore from another checkpoint`,
      { cause: error },
    );
  }
}

/** The `typeof` of a key as a snapshot encodes it (bigints as `{ $bigint }`). */
export function encodedKeyType(encoded: unknown): string {
  return typeof encoded === 'object' ? 'bigint' : typeof encoded;
}

/**
 * A restored state's keys must be of the type the job keys by now: a key of another type would never meet its
 * saved state (Flink's key serializer check). `saved` are the key types the restored entries hold.
 */
export function checkKeyType(uid: string, stateName: string, saved: ReadonlySet<string>, key: unknown): void {
  if (saved.size === 0 || saved.has(typeof key)) return;
  throw new StateMigrationError(
    `operator '${uid}': state '${stateName}' was saved with keys of type ${Array.from(saved).join(', ')}, ` +
      `but the job now keys by ${typeof key}; keep the key type (convert keys in keyBy), or use a new uid`,
  );
}

/** A snapshot entry pointing at a state its snapshot does not declare. */
export function undeclaredState(uid: string, index: number): StateMigrationError {
  return new StateMigrationError(`operator '${uid}': a snapshot entry names state #${index}, which the snapshot does not declare`);
}
