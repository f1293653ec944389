import { StateDescriptorConflictError } from '../../core/errors.js';
import type {
  Key,
  KeyedBackendOptions,
  KeyedSnapshot,
  KeyedStateBackend,
  KeyedStatePayload,
  SnapshotEntry,
  StateBackend,
  StateClock,
  StateDescriptor,
} from '../../core/types.js';
import { checkSameRegistration } from '../stateChecks.js';
import { unbucketedCount } from '../payloadEntries.js';
import { isExpired, resolveTtl, sameTtl, ttlNow, type ResolvedTtl } from './ttlConfig.js';
import { storedDescriptor, type EncodedStamped, type Stamped } from './ttlDescriptor.js';
import { TtlAggregatingState, TtlListState, TtlMapState, TtlReducingState, TtlValueState, type TtlScope } from './ttlStates.js';

/**
 * Gives a state backend state TTL (`ttl` on state descriptors). TTL is a layer over the backend, not a feature of
 * each: a state with a TTL is stored in the backend under it as an ordinary state of stamped values (each with the
 * time of its last access), and the layer checks and updates those times. So the heap and LMDB backends (which
 * apply it already) and any other backend get the same semantics, and the times travel through snapshots, savepoints
 * and rescaling with the values. Time comes from `KeyedBackendOptions.clock`, which the job supplies.
 * @example
 * const myBackend: StateBackend = withStateTtl({ name: 'mine', createKeyedBackend: (options) => new MyKeyedBackend(options) });
 */
export function withStateTtl(backend: StateBackend): StateBackend {
  return { name: backend.name, createKeyedBackend: (options) => new TtlKeyedStateBackend(backend, options) };
}

type TtlState = TtlValueState<unknown> | TtlListState<unknown> | TtlMapState<unknown, unknown> | TtlReducingState<unknown> | TtlAggregatingState<unknown, unknown>;

/** One state with a TTL, registered on the layer. */
interface TtlEntry extends TtlScope {
  readonly descriptor: StateDescriptor<unknown>;
  /** The descriptor registered in the backend beneath. */
  readonly stored: StateDescriptor<unknown>;
  readonly state: TtlState;
  /** Incremental cleanup's position: keys of the state in `namespace` still to look at. */
  cursor?: { namespace: string; keys: Iterator<Key> };
}

class TtlKeyedStateBackend implements KeyedStateBackend {
  private readonly inner: KeyedStateBackend;
  private readonly entries = new Map<string, TtlEntry>();
  /** The descriptor each stored descriptor stands for, so that registration callbacks see the user's descriptor. */
  private readonly users = new WeakMap<StateDescriptor<unknown>, StateDescriptor<unknown>>();
  private namespace = '';
  private readonly uid: string;
  private readonly clock: StateClock | undefined;

  constructor(backend: StateBackend, options: KeyedBackendOptions) {
    this.uid = options.uid;
    this.clock = options.clock;
    const { onStateRegistered } = options;
    this.inner = backend.createKeyedBackend({
      ...options,
      onStateRegistered: onStateRegistered && ((descriptor) => onStateRegistered(this.users.get(descriptor) ?? descriptor)),
    });
  }

  setCurrentKey(key: Key): void {
    this.inner.setCurrentKey(key);
  }

  getCurrentKey(): Key | undefined {
    return this.inner.getCurrentKey();
  }

  setCurrentNamespace(namespace: string): void {
    this.namespace = namespace;
    this.inner.setCurrentNamespace(namespace);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  getState<S>(descriptor: StateDescriptor<S, any>): S {
    if (descriptor.ttl === undefined) return this.inner.getState(descriptor);
    return this.entry(descriptor as StateDescriptor<unknown>).state as S;
  }

  private entry(descriptor: StateDescriptor<unknown>): TtlEntry {
    const known = this.entries.get(descriptor.name);
    if (known !== undefined) {
      if (known.descriptor !== descriptor) this.checkSame(known.descriptor, descriptor);
      return known;
    }
    const clock = this.clock;
    if (clock === undefined) {
      throw new TypeError(
        `operator '${this.uid}': state '${descriptor.name}' has a TTL, but its keyed state backend was created without a clock; ` +
          'pass { clock } to createKeyedBackend (a job does)',
      );
    }
    const config = resolveTtl(descriptor.ttl!);
    const now = () => ttlNow(clock, config);
    const stored = storedDescriptor(descriptor, config, now);
    this.users.set(stored, descriptor);
    const inner = this.inner.getState(stored);
    const entry: TtlEntry = {
      name: descriptor.name,
      config,
      descriptor,
      stored,
      now,
      accessed: config.incremental > 0 ? () => this.cleanUp(entry) : () => undefined,
      state: undefined as never,
    };
    (entry as { state: TtlState }).state = ttlState(entry, inner, descriptor);
    this.entries.set(descriptor.name, entry);
    return entry;
  }

  /** A second descriptor of a TTL state: same kind and serializer as the first (backends check it so), and same TTL. */
  private checkSame(was: StateDescriptor<unknown>, descriptor: StateDescriptor<unknown>): void {
    checkSameRegistration(this.uid, was, descriptor);
    if (!sameTtl(was.ttl!, descriptor.ttl!)) {
      throw new StateDescriptorConflictError(
        `operator '${this.uid}': state '${descriptor.name}' is already registered with another TTL configuration ` +
          `(${JSON.stringify(was.ttl)}, not ${JSON.stringify(descriptor.ttl)}); use one descriptor, or give the second state another name`,
      );
    }
  }

  /** The descriptor the backend beneath knows a state by. */
  private storedOf(descriptor: StateDescriptor<unknown>): StateDescriptor<unknown> {
    return descriptor.ttl === undefined ? descriptor : this.entry(descriptor).stored;
  }

  /**
   * Flink's incremental cleanup: after each access of a state, look at `cleanup.incremental` more of its keys (in the
   * current namespace) and drop what expired there, going round the keys again once through them.
   */
  private cleanUp(entry: TtlEntry): void {
    const { inner, namespace } = this;
    if (entry.cursor?.namespace !== namespace) entry.cursor = { namespace, keys: inner.keysOf(entry.stored, namespace)[Symbol.iterator]() };
    const current = inner.getCurrentKey();
    const now = entry.now();
    try {
      for (let i = 0; i < entry.config.incremental; i++) {
        const next = entry.cursor.keys.next();
        if (next.done) {
          entry.cursor = undefined;
          break;
        }
        inner.setCurrentKey(next.value);
        entry.state.purge(now);
      }
    } finally {
      if (current !== undefined) inner.setCurrentKey(current);
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  mergeNamespaces(descriptor: StateDescriptor<unknown, any>, target: string, sources: readonly string[]): void {
    this.inner.mergeNamespaces(this.storedOf(descriptor), target, sources);
  }

  /**
   * With `cleanup.fullSnapshot`, values that expired by the time of the barrier are left out of the snapshot (Flink's
   * cleanup in full snapshot): the payload is filtered as it is materialised, with the time taken here.
   */
  snapshot(): KeyedSnapshot {
    const snapshot = this.inner.snapshot();
    const filtered = new Map<string, { entry: TtlEntry; now: number }>();
    for (const entry of this.entries.values()) if (entry.config.fullSnapshot) filtered.set(entry.name, { entry, now: entry.now() });
    if (filtered.size === 0) return snapshot;
    const filter = (payload: KeyedStatePayload) => withoutExpired(payload, filtered);
    const filtering: KeyedSnapshot = {
      materialize: () => filter(snapshot.materialize()),
      *materializeChunks(maxEntries) {
        for (const chunk of snapshot.materializeChunks(maxEntries)) {
          const kept = filter(chunk);
          if (kept.keyGroups.length > 0 || unbucketedCount(kept) > 0) yield kept;
        }
      },
      release: () => snapshot.release(),
      // Filtering keeps a piece's form (unbucketed entries stay so, with their range).
      ...(snapshot.flatChunks === undefined ? {} : { flatChunks: snapshot.flatChunks }),
      // Filtering only removes entries: the count stays an upper bound.
      ...(snapshot.entries === undefined ? {} : { entries: snapshot.entries }),
    };
    // An incremental checkpoint's delta is not a full snapshot: it goes out as it is (as in Flink).
    if (snapshot.materializeChangeChunks) filtering.materializeChangeChunks = (maxEntries) => snapshot.materializeChangeChunks!(maxEntries);
    return filtering;
  }

  restore(payloads: KeyedStatePayload[]): void {
    this.inner.restore(payloads);
  }

  keyCount(): number {
    return this.inner.keyCount();
  }

  /** The backend beneath's count: expired entries count until they are cleaned up. */
  stateEntries(): number | undefined {
    return this.inner.stateEntries?.();
  }

  /** The keys holding a value of the state, expired or not (until cleaned up). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  keysOf(descriptor: StateDescriptor<unknown, any>, namespace?: string): Iterable<Key> {
    return this.inner.keysOf(this.storedOf(descriptor), namespace);
  }

  /** What `key` holds, without what expired; a look from outside (a query) neither cleans up nor restamps. */
  peek<STORED>(descriptor: StateDescriptor<unknown, STORED>, key: Key, namespace?: string): STORED | undefined {
    if (descriptor.ttl === undefined) return this.inner.peek(descriptor, key, namespace);
    const entry = this.entry(descriptor as StateDescriptor<unknown>);
    const stored = this.inner.peek(entry.stored, key, namespace);
    return stored === undefined ? undefined : (liveValue(descriptor.kind, stored, entry.config, entry.now()) as STORED | undefined);
  }

  dispose(): void {
    this.entries.clear();
    this.inner.dispose();
  }
}

function ttlState(scope: TtlScope, inner: unknown, descriptor: StateDescriptor<unknown>): TtlState {
  switch (descriptor.kind) {
    case 'value':
      return new TtlValueState(scope, inner as never, descriptor.defaultValue);
    case 'list':
      return new TtlListState(scope, inner as never);
    case 'map':
      return new TtlMapState(scope, inner as never);
    case 'reducing':
      return new TtlReducingState(scope, inner as never);
    case 'aggregating':
      return new TtlAggregatingState(scope, inner as never, descriptor.aggregate);
  }
}

/** The stored form of a state without its times and without what expired; undefined when nothing is left. */
function liveValue(kind: StateDescriptor<unknown>['kind'], stored: unknown, config: ResolvedTtl, now: number): unknown {
  const live = ([, time]: Stamped<unknown>) => !isExpired(time, config, now);
  switch (kind) {
    case 'list': {
      const values = (stored as Stamped<unknown>[]).filter(live).map(([value]) => value);
      return values.length === 0 ? undefined : values;
    }
    case 'map': {
      const map = new Map(Array.from(stored as Map<unknown, Stamped<unknown>>).filter(([, stamped]) => live(stamped)).map(([key, [value]]) => [key, value]));
      return map.size === 0 ? undefined : map;
    }
    default:
      return live(stored as Stamped<unknown>) ? (stored as Stamped<unknown>)[0] : undefined;
  }
}

/** A payload without the expired values of the `filtered` states (by name, each with the snapshot's time). */
function withoutExpired(payload: KeyedStatePayload, filtered: ReadonlyMap<string, { entry: TtlEntry; now: number }>): KeyedStatePayload {
  const byIndex = payload.states.map((meta) => (meta.ttl ? filtered.get(meta.name) : undefined));
  if (byIndex.every((state) => state === undefined)) return payload;
  const live = (entries: readonly SnapshotEntry[]) => {
    const kept: SnapshotEntry[] = [];
    for (const snapshotEntry of entries) {
      const state = byIndex[snapshotEntry[0]];
      if (state === undefined) {
        kept.push(snapshotEntry);
        continue;
      }
      const value = liveEncoded(state.entry, payload.states[snapshotEntry[0]]!.serializerVersion, snapshotEntry[2], state.now);
      if (value === undefined) continue;
      const copy = snapshotEntry.slice() as SnapshotEntry;
      copy[2] = value;
      kept.push(copy);
    }
    return kept;
  };
  const keyGroups: [number, SnapshotEntry[]][] = [];
  for (const [keyGroup, entries] of payload.keyGroups) {
    const kept = live(entries);
    if (kept.length > 0) keyGroups.push([keyGroup, kept]);
  }
  // Unbucketed entries (flat, see `forEachPayloadEntry`) are filtered alike, keeping their range.
  const liveFlat = (flat: readonly unknown[], stride: number) => {
    const kept: unknown[] = [];
    for (let i = 0; i < flat.length; i += stride) {
      const index = flat[i] as number;
      const state = byIndex[index];
      let value = flat[i + 2];
      if (state !== undefined) {
        value = liveEncoded(state.entry, payload.states[index]!.serializerVersion, value, state.now);
        if (value === undefined) continue;
      }
      kept.push(index, flat[i + 1], value);
      if (stride === 4) kept.push(flat[i + 3]);
    }
    return kept;
  };
  let kept: KeyedStatePayload = { ...payload, keyGroups };
  if (payload.flat !== undefined) kept = { ...kept, flat: liveFlat(payload.flat, 3) };
  if (payload.flatNamespaced !== undefined) kept = { ...kept, flatNamespaced: liveFlat(payload.flatNamespaced, 4) };
  return kept;
}

/**
 * An encoded stored value without what expired, undefined when nothing is left. Times are encoded beside the values
 * (see `ttlSerializer`), so only a list or map with some expired elements is decoded and encoded again.
 */
function liveEncoded(entry: TtlEntry, serializerVersion: number, encoded: unknown, now: number): unknown {
  const [, times] = encoded as EncodedStamped;
  if (!Array.isArray(times)) return isExpired(times, entry.config, now) ? undefined : encoded;
  const expired = times.filter((time) => isExpired(time, entry.config, now)).length;
  if (expired === 0) return encoded;
  if (expired === times.length) return undefined;
  const { serializer, kind } = entry.stored;
  return serializer.encode(liveStamped(kind, serializer.decode(encoded, serializerVersion), entry.config, now));
}

function liveStamped(kind: StateDescriptor<unknown>['kind'], stored: unknown, config: ResolvedTtl, now: number): unknown {
  const live = ([, time]: Stamped<unknown>) => !isExpired(time, config, now);
  return kind === 'list'
    ? (stored as Stamped<unknown>[]).filter(live)
    : new Map(Array.from(stored as Map<unknown, Stamped<unknown>>).filter(([, stamped]) => live(stamped)));
}
