/**
 * The contracts every part of weir is built against. Implementations depend on these types, never on each other,
 * so a new state backend, checkpoint storage, source or sink only has to satisfy the interface it implements.
 */
import type { SchedulerLike } from 'rxjs';

/** A key of a keyed flow. Keys are compared by value (JavaScript `Map` semantics), so they must be primitives. */
export type Key = string | number | boolean | bigint;

/** A JSON value: what offsets and operator state are made of. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** An inclusive range of key groups `[start, end]` owned by one parallel operator instance. */
export interface KeyGroupRange {
  readonly start: number;
  readonly end: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Serialization
// ---------------------------------------------------------------------------------------------------------------

/**
 * Turns state values into JSON-safe values for snapshots and back. Chosen per state descriptor.
 * `id` and `version` are recorded in every snapshot so that restoring under another serializer is detected.
 */
export interface Serializer<T> {
  readonly id: string;
  readonly version: number;
  encode(value: T): unknown;
  decode(encoded: unknown, writtenWithVersion: number): T;
}

// ---------------------------------------------------------------------------------------------------------------
// Keyed state
// ---------------------------------------------------------------------------------------------------------------

export type StateKind = 'value' | 'list' | 'map' | 'reducing' | 'aggregating';

/** Flink's AggregateFunction: an accumulator built incrementally, read through `getResult`. */
export interface AggregateFunction<IN, ACC, OUT> {
  createAccumulator(): ACC;
  add(value: IN, accumulator: ACC): ACC;
  getResult(accumulator: ACC): OUT;
  merge(a: ACC, b: ACC): ACC;
}

/**
 * Names a piece of keyed state and says how to build, default and serialize it: one shape per kind (`kind` tells
 * them apart), so a reducing state always carries its `reduce` and an aggregating one its `aggregate`. Create with
 * `valueState()` & co.
 * @example const seen: StateDescriptor<ValueState<number>, number> = valueState<number>('seen', { default: 0 });
 */
export type StateDescriptor<S, STORED = unknown> =
  | ValueStateDescriptor<S, STORED>
  | ListStateDescriptor<S, STORED>
  | MapStateDescriptor<S, STORED>
  | ReducingStateDescriptor<S, STORED>
  | AggregatingStateDescriptor<S, STORED>;

/** What the descriptors of every kind carry. */
export interface StateDescriptorBase<S, STORED> {
  readonly name: string;
  readonly kind: StateKind;
  readonly serializer: Serializer<STORED>;
  /** Name under which `running.query` and the queryable state server read this state; unique within a job. */
  readonly queryable?: string;
  /** Version of the stored values' schema (1 when absent), recorded with the state; see `migrate`. */
  readonly version?: number;
  /**
   * Turns a value saved under an older `version` into the current form, when restored state is first used. Applied
   * to each element of a list state, each value of a map state, and the value (or accumulator) of the other kinds.
   */
  readonly migrate?: (value: unknown, fromVersion: number) => unknown;
  /** Time-to-live: values (list and map entries each) expire this long after their last access; see `StateTtlConfig`. */
  readonly ttl?: StateTtlConfig;
  /** Phantom field carrying the state object's type; never set. */
  readonly __state?: S;
}

/** A single value per key (`valueState()`). */
export interface ValueStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'value';
  /** Value read for a key that holds none; copied per read, never shared between keys. */
  readonly defaultValue?: STORED;
  /**
   * True when values read from the state are never changed in place, only replaced through `update` (Flink: an
   * immutable type, whose serializer's `copy` is the identity). A read while a snapshot still holds the value then
   * hands out the value itself instead of a private copy. `reduce` sets it: its reducer returns a new value.
   */
  readonly immutable?: boolean;
}

/** A list of elements per key (`listState()`). */
export interface ListStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'list';
}

/** A map per key (`mapState()`). */
export interface MapStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'map';
}

/** Values folded into one as they are added (`reducingState()`). */
export interface ReducingStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'reducing';
  readonly reduce: (a: STORED, b: STORED) => STORED;
}

/** Values added into an accumulator (`aggregatingState()`). */
export interface AggregatingStateDescriptor<S, STORED = unknown> extends StateDescriptorBase<S, STORED> {
  readonly kind: 'aggregating';
  readonly aggregate: AggregateFunction<unknown, STORED, unknown>;
}

/**
 * A state descriptor of any kind and stored type, as in a list of the states an operator declares.
 * @example const declared: AnyStateDescriptor[] = [valueState<number>('count'), mapState<string, Date>('pages')];
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type: the list mixes kinds
export type AnyStateDescriptor = StateDescriptor<unknown, any>;

/**
 * State time-to-live (Flink's StateTtlConfig). A value expires once `lastAccess + ttl <= now`; value, reducing and
 * aggregating state expire as a whole, list and map state per element and per entry.
 */
export interface StateTtlConfig {
  /** How long a value lives after its last access, in ms of `timeCharacteristic` time (> 0). */
  readonly ttl: number;
  /** Which accesses restart the clock: writes only (default), or reads too. */
  readonly update?: 'on-create-and-write' | 'on-read-and-write';
  /** Whether an expired value still in state may be read once more (it is removed by that read), or never (default). */
  readonly visibility?: 'never-return-expired' | 'return-expired-if-not-cleaned-up';
  /**
   * Expired values are always dropped when read. Besides: `fullSnapshot` leaves them out of every snapshot written;
   * `incremental: n` checks `n` more keys of the state for expired values on each access of it.
   */
  readonly cleanup?: { readonly fullSnapshot?: boolean; readonly incremental?: number };
  /**
   * Whose time: the job's clock (`'processing-time'`, default, as in Flink), or the operator's current watermark
   * (`'event-time'`, which Flink lacks; before the first watermark, the timestamp of the record being processed).
   */
  readonly timeCharacteristic?: 'processing-time' | 'event-time';
}

/** Time as keyed state sees it, for TTL: given to a keyed backend by the job (`KeyedBackendOptions.clock`). */
export interface StateClock {
  /** The job's processing time: its scheduler's `now()`. */
  processingTime(): number;
  /** The operator's event time: its current watermark. */
  eventTime(): number;
}

export interface ValueState<T> {
  /** The key's value, the descriptor's default (a fresh copy) when it holds none, else `undefined`. */
  value(): T | undefined;
  /** Sets the key's value; `update(undefined)` clears it. */
  update(value: T | undefined): void;
  clear(): void;
}

export interface ListState<T> {
  /** The key's elements (a copy); an empty array when it holds none. */
  get(): T[];
  add(value: T): void;
  addAll(values: Iterable<T>): void;
  /** Replaces all elements; an empty list clears. */
  update(values: Iterable<T>): void;
  clear(): void;
}

export interface MapState<K, V> {
  get(key: K): V | undefined;
  put(key: K, value: V): void;
  putAll(entries: Iterable<readonly [K, V]> | Map<K, V>): void;
  remove(key: K): void;
  contains(key: K): boolean;
  entries(): [K, V][];
  keys(): K[];
  values(): V[];
  isEmpty(): boolean;
  clear(): void;
}

export interface ReducingState<T> {
  /** The reduction of everything added, or `undefined` when nothing was added. */
  get(): T | undefined;
  add(value: T): void;
  clear(): void;
}

export interface AggregatingState<IN, OUT> {
  /** `getResult` of the accumulator, or `undefined` when nothing was added. */
  get(): OUT | undefined;
  add(value: IN): void;
  clear(): void;
}

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
  /** With `flat` / `flatNamespaced`: the key groups `[first, last]` their entries may belong to (the writing instance's range). */
  readonly range?: [number, number];
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
  /** Releases copy-on-write bookkeeping; called once the payload is produced or the checkpoint aborted. */
  release(): void;
  /**
   * True when every piece `materializeChunks` gives holds only unbucketed entries (`flat`, `flatNamespaced`) of one
   * range, with the same `states`: consecutive pieces may then go into one state file, so a checkpoint asks for
   * small pieces and encodes a file between the job's records, piece by piece (a heap full snapshot).
   */
  readonly flatChunks?: boolean;
}

/** Working state of one keyed operator instance. Reads and writes are synchronous: this is the hot path. */
export interface KeyedStateBackend {
  setCurrentKey(key: Key): void;
  getCurrentKey(): Key | undefined;
  /**
   * Scopes every state to a namespace besides the key, as windows need (Flink's state namespace); `''` (the
   * default) is state not scoped to a window.
   */
  setCurrentNamespace(namespace: string): void;
  /**
   * Merges the current key's state in the `sources` namespaces into `target` and clears them (merging windows): lists
   * are concatenated, reducing and aggregating states combined with their functions, maps merged.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  mergeNamespaces(descriptor: StateDescriptor<unknown, any>, target: string, sources: readonly string[]): void;
  /** The state object for a descriptor, bound to whatever key is current when its methods are called. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type: the descriptor's S is what matters here
  getState<S>(descriptor: StateDescriptor<S, any>): S;
  /** Captures the state as of now in O(1) or close to it; later writes never show in the snapshot. */
  snapshot(): KeyedSnapshot;
  /** Loads the entries of the payloads that fall in this backend's key-group range. */
  restore(payloads: KeyedStatePayload[]): void;
  /** Number of keys holding any state, for stats and tests. */
  keyCount(): number;
  /**
   * The keys holding a value of a registered state in `namespace` (`''` by default), in no particular order, for
   * queryable state and tools. Iterating may interleave with processing: keys written meanwhile may or may not show.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  keysOf(descriptor: StateDescriptor<unknown, any>, namespace?: string): Iterable<Key>;
  /**
   * What `key` holds of a registered state (the stored form: a list, a Map, an accumulator), as a copy the caller may
   * keep; undefined when it holds none (no default). Leaves the current key and namespace as they are.
   */
  peek<STORED>(descriptor: StateDescriptor<unknown, STORED>, key: Key, namespace?: string): STORED | undefined;
  dispose(): void;
}

/** Where working state lives (Flink's StateBackend): makes one keyed backend per keyed operator instance. */
export interface StateBackend {
  readonly name: string;
  createKeyedBackend(options: KeyedBackendOptions): KeyedStateBackend;
}

export interface KeyedBackendOptions {
  uid: string;
  maxParallelism: number;
  keyGroupRange: KeyGroupRange;
  /** Called once per state the first time a descriptor registers it (e.g. to index queryable states); may throw. */
  onStateRegistered?: (descriptor: StateDescriptor<unknown>) => void;
  /** Track the keys written between snapshots, for `KeyedSnapshot.materializeChangeChunks` (incremental checkpoints). */
  trackChanges?: boolean;
  /**
   * Time for state TTL, given by the job. Backends need not read it: `withStateTtl` layers TTL over a backend and
   * takes its time from here. A state with a TTL cannot be used without it.
   */
  clock?: StateClock;
}

// ---------------------------------------------------------------------------------------------------------------
// Checkpoint storage
// ---------------------------------------------------------------------------------------------------------------

/**
 * Where snapshot bytes are persisted. Paths are `/`-separated and relative to the storage's root. Implementations
 * keep to these few methods; layout, formats, checksums and retention live above them, shared by every storage.
 */
export interface CheckpointStorage {
  /** Human-readable root, used in messages (a directory, `memory`, a database name). */
  readonly location: string;
  /** Largest snapshot of one operator this storage accepts, in bytes (Flink's memory storage limit). */
  readonly maxStateSize?: number;
  /** Writes all bytes or nothing: a reader never sees a torn file. */
  write(path: string, data: Uint8Array): Promise<void>;
  /** Reads a file; rejects with `CheckpointNotFoundError` when it does not exist. */
  read(path: string): Promise<Uint8Array>;
  /**
   * Optional, for storages that keep structured-clone values (IndexedDB): writes a state file with values kept
   * beside its bytes, all or nothing. Checkpoints then set rich state values (Map, Set, Date, BigInt, …) aside for
   * the storage to clone instead of encoding them with superjson; `readStructured` must give them back.
   */
  writeStructured?(path: string, data: Uint8Array, values: readonly unknown[]): Promise<void>;
  /** With `writeStructured`: a file's bytes and the values kept beside them (none for a file written by `write`). */
  readStructured?(path: string): Promise<{ data: Uint8Array; values: readonly unknown[] }>;
  /** Names of the direct children of a directory (files and directories); empty when it does not exist. */
  list(dir: string): Promise<string[]>;
  /** Removes a file or a directory with everything under it; no error when it does not exist. */
  remove(path: string): Promise<void>;
  /** Where a path is, for users (an absolute path on disk); defaults to the path itself. */
  describe?(path: string): string;
  /**
   * Optional: takes the exclusive lock of a job's directory for as long as a run of the job lasts, rejecting with
   * `CheckpointDirectoryLockedError` while another live run holds it. Storages shared between processes (the file
   * system) implement it; a lock left by a process that died must not block forever.
   */
  lock?(job: string): Promise<CheckpointLock>;
}

/** A held `CheckpointStorage.lock`. */
export interface CheckpointLock {
  /** Gives the lock up; a no-op once the lock was taken over or removed. */
  release(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------
// Sources and sinks
// ---------------------------------------------------------------------------------------------------------------

/** Reads a source for one attempt of a job. */
export interface SourceReader<T> {
  /**
   * Up to `max` records; an empty array when none is ready yet, `null` at the end of input. May return a promise
   * (waiting for input); the engine injects barriers only between two reads.
   */
  read(max: number): T[] | null | Promise<T[] | null>;
  /** Position just after the last record returned by `read`, from which `open` resumes. */
  offset(): Json;
  close?(): void | Promise<void>;
}

/**
 * Where records come from. A replayable source resumes from an offset saved in a checkpoint, which is what gives
 * exactly-once state after a restore; implement this interface for your own sources.
 */
export interface Source<T> {
  /** Shown in messages, e.g. `fromFile(tx.jsonl)`. */
  readonly name: string;
  readonly replayable: boolean;
  open(context: { uid: string; restoredOffset: Json | undefined }): SourceReader<T> | Promise<SourceReader<T>>;
  /** The job ended (finished, failed for good or cancelled): release what outlives attempts. */
  ended?(): void;
}

/** Writes the records that reach a sink for one attempt of a job. */
export interface SinkWriter<T> {
  write(value: T): void;
  /**
   * Checkpoint barrier: make what was written since the last barrier durable but not yet visible (pre-commit) and
   * return the state to store in the checkpoint; `open` receives it back on restore.
   */
  snapshot?(checkpointId: number): Json | Promise<Json>;
  /** The checkpoint completed: make its writes visible. */
  commit?(checkpointId: number): void | Promise<void>;
  /** End of input: flush and make everything visible. */
  finish(): void | Promise<void>;
  /** The attempt failed: discard what is not committed. */
  abort(): void | Promise<void>;
}

/** Where records leave weir. Transactional sinks implement `snapshot`/`commit` on their writers. */
export interface Sink<T> {
  readonly name: string;
  open(context: { uid: string; restoredState: Json | undefined; checkpointing: boolean }): SinkWriter<T> | Promise<SinkWriter<T>>;
  /** The job ended: `error` is why it failed for good, undefined when it finished, stopped or was cancelled. */
  ended?(error: unknown): void;
}

/** Time as the job sees it: any RxJS scheduler (`asyncScheduler` by default, a `TestScheduler` in tests). */
export type Scheduler = SchedulerLike;
