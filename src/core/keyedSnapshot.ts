// The canonical, backend-independent form of keyed state in snapshots, which every backend writes and reads.
import type { StateKind } from './keyedState.js';

/** Describes one state as persisted, so a restore can check it against the descriptor that reads it. */
export interface StateMeta {
  readonly name: string;
  readonly kind: StateKind;
  readonly serializer: string;
  readonly serializerVersion: number;
  /** The descriptor's schema `version`; absent for version 1. */
  readonly version?: number;
  /** Whether values are stored with their TTL timestamps (`StateDescriptor.ttl`); absent without TTL. */
  readonly ttl?: true;
}

/**
 * The canonical, backend-independent form of a keyed snapshot: entries bucketed by key group (`keyGroups`), or for
 * a full snapshot possibly in no particular order (`flat`, `flatNamespaced`, each key's group computed only by a reader that must
 * filter). Keys and values are already encoded (JSON-safe); `state` indexes into `states`. Every backend writes and
 * reads this shape, so state moves between backends and parallelisms. Read entries with `forEachPayloadEntry`
 * (src/state/payloadEntries.ts), which handles both forms.
 */
export interface KeyedStatePayload {
  readonly states: StateMeta[];
  /**
   * `[keyGroup, [[stateIndex, encodedKey, encodedValue, namespace?], …]]` for every non-empty key group; the
   * namespace (a window) is left out for state that is not scoped to one.
   */
  readonly keyGroups: [number, SnapshotEntry[]][];
  /**
   * Only in a delta (an incremental checkpoint's payload, see `KeyedSnapshot.materializeChangeChunks`): the entries
   * removed since the previous snapshot, `[keyGroup, [[stateIndex, encodedKey, namespace?], …]]`. Restoring a delta
   * after the payloads it follows applies its entries over theirs and removes these.
   */
  readonly removed?: [number, RemovedEntry[]][];
  /**
   * Entries not bucketed by key group, in no particular order (a heap backend's full snapshot writes its tables as
   * they are: cheaper to produce and to encode), flat with no array per entry: `state, encodedKey, encodedValue`
   * triples for state not scoped to a namespace. Each belongs to the key group of its key (`keyGroupOf`), which lies
   * in `range`. A payload may hold these, `flatNamespaced` and `keyGroups`; state files with them are format version 2.
   */
  readonly flat?: unknown[];
  /** Like `flat`, for state scoped to a namespace (a window): `state, encodedKey, encodedValue, namespace` quadruples. */
  readonly flatNamespaced?: unknown[];
  /**
   * Like `flat`, for values that are plain objects of one shape (the same fields in the same order, each a string,
   * finite number, boolean or null), as rows of their fields: cheaper to stringify than objects and to check than
   * a value's whole tree. Only in state files (format version 5) and in the pieces of
   * `KeyedSnapshot.materializeShapedChunks`; a reader gets them as `flat` entries (`checkStatePayload` expands them).
   */
  readonly shaped?: ShapedEntries[];
  /** With `flat` / `flatNamespaced` / `shaped`: the key groups `[first, last]` their entries may belong to (the writing instance's range). */
  readonly range?: [number, number];
}

/**
 * Entries of one state whose values are objects with `fields`, not scoped to a namespace: `rows` holds, per entry,
 * the encoded key then the value of each field, so `{ key: 'k1', n: 3 }` under key `'k1'` is `'k1', 'k1', 3`.
 */
export interface ShapedEntries {
  readonly state: number;
  readonly fields: string[];
  readonly rows: unknown[];
}

/** One key's value of one state in one namespace, encoded. */
export type SnapshotEntry = [state: number, key: unknown, value: unknown, namespace?: string];

/** One key's value of one state in one namespace that a delta removes. */
export type RemovedEntry = [state: number, key: unknown, namespace?: string];

/**
 * A snapshot whose synchronous part is done: state is frozen, `materialize` or `materializeChunks` (one of them,
 * once) produces its payload later.
 */
export interface KeyedSnapshot {
  materialize(): KeyedStatePayload;
  /**
   * The payload in pieces, for state larger than memory: each piece holds whole key groups in ascending order and at
   * most about `maxEntries` entries; only a key group with more entries than that is spread over consecutive pieces.
   * A backend may instead give pieces of at most `maxEntries` unbucketed entries (see `KeyedStatePayload.flat`).
   * Pieces are produced as the iterable is consumed, so the caller holds one at a time; an empty state yields none.
   * Releases the snapshot once iterated to the end.
   */
  materializeChunks(maxEntries: number): Iterable<KeyedStatePayload>;
  /**
   * Like `materializeChunks`, but only what changed since this backend's previous snapshot (a delta, for incremental
   * checkpoints): the entries written since, with their values as of this snapshot, and `removed` entries for those
   * deleted since. Present when the backend was created with `trackChanges`. Taking a snapshot starts a new change
   * set whichever way it is materialised, so a delta is only meaningful on top of the previous snapshot's state.
   */
  materializeChangeChunks?(maxEntries: number): Iterable<KeyedStatePayload>;
  /**
   * Like `materializeChunks` of a snapshot with `flatChunks`, but values of states whose serializer keeps plain
   * values as they are (`Serializer.plainAsIs`) may come as rows (`KeyedStatePayload.shaped`): for a writer that
   * builds state files of the pieces (`FlatStateFileBuilder`), which readers expand back into entries.
   */
  materializeShapedChunks?(maxEntries: number): Iterable<KeyedStatePayload>;
  /** Releases copy-on-write bookkeeping; called once the payload is produced or the checkpoint aborted. */
  release(): void;
  /**
   * True when every piece `materializeChunks` gives holds only unbucketed entries (`flat`, `flatNamespaced`) of one
   * range, with the same `states`: consecutive pieces may then go into one state file, so a checkpoint asks for
   * small pieces and encodes a file between the job's records, piece by piece (a heap full snapshot).
   */
  readonly flatChunks?: boolean;
  /** At most how many entries `materializeChunks` gives, when the backend knows: a writer sizes its buffers by it. */
  readonly entries?: number;
}
