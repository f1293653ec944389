// Working keyed state (Flink's StateBackend / KeyedStateBackend): what the engine asks of every backend.
import type { Key } from './values.js';
import type { StateClock, StateDescriptor } from './keyedState.js';
import type { KeyedSnapshot, KeyedStatePayload } from './keyedSnapshot.js';

/** An inclusive range of key groups `[start, end]` owned by one parallel operator instance. */
export interface KeyGroupRange {
  readonly start: number;
  readonly end: number;
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
   * How many entries (a key's value in one state and namespace) the backend holds, counted cheaply enough for a
   * metrics scrape (no scan of the keys): approximate where the backend says so; undefined when it cannot tell.
   */
  stateEntries?(): number | undefined;
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
