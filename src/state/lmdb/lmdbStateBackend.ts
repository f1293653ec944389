import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import type * as Lmdb from 'lmdb';
import { keyGroupOf } from '../../core/keyGroups.js';
import type {
  Key,
  KeyGroupRange,
  KeyedSnapshot,
  KeyedStateBackend,
  KeyedStatePayload,
  StateBackend,
  StateDescriptor,
  StateMeta,
} from '../../core/types.js';
import { copyValue } from '../copyValue.js';
import { mergeStateValues } from '../mergeStateValues.js';
import { checkKeyType, checkRestoredMeta, metaOf, needsMigration, requireKey } from '../stateChecks.js';
import { adoptRestoredRows } from './adoptRows.js';
import { KeyWriter, PREFIX_BYTES, STRUCTURES_ROW, readKeyPart, readNamespace, stateIdOfRow } from './keyEncoding.js';
import { restoreRows } from './lmdbRestore.js';
import { lmdbSnapshot, type SnapshotState } from './lmdbSnapshot.js';
import { LmdbAggregatingState, LmdbListState, LmdbMapState, LmdbReducingState, LmdbValueState } from './lmdbStates.js';
import { MapRows } from './mapRows.js';
import type { RowStore, StateDatabase } from './rowStore.js';
import { ValueRows } from './valueRows.js';
import { removeAbandonedWorkingDirectories, workingDirectoryPrefix } from './workingDirectories.js';
import { FLUSH_AFTER_WRITES, WriteBatches } from './writeBatches.js';
import { StateRegistry } from '../stateRegistry.js';
import { withStateTtl } from '../ttl/withStateTtl.js';

/**
 * lmdb (a native addon) is loaded when a backend first opens a database, not when weir/node is imported: every
 * worker thread of a job started with `startJob` imports all of weir/node, whatever backend the job uses.
 */
const require = createRequire(import.meta.url);
let loaded: typeof Lmdb | undefined;
const lmdb = (): typeof Lmdb => (loaded ??= require('lmdb') as typeof Lmdb);

export interface LmdbStateBackendOptions {
  /** Directory under which each keyed operator instance gets its own working directory; `os.tmpdir()` by default. */
  path?: string;
  /** Largest size the working database may grow to, in bytes; LMDB grows it as needed by default. */
  mapSize?: number;
  /**
   * Buffered writes (value, list, reducing and aggregating state) per LMDB write transaction; 262 144 by default.
   * Larger batches run faster on many random keys and hold more decoded values in the heap meanwhile.
   */
  writeBatch?: number;
}

/**
 * Working state in LMDB, an embedded memory-mapped key-value store (the role RocksDB plays in Flink): state is
 * bounded by disk, not by the JavaScript heap. Each keyed operator instance opens its own database in a fresh
 * directory under `path`, removed when the job ends; the directories of processes that were killed are removed by
 * the next start under the same `path`. Reads and writes stay synchronous; writes are buffered and written in
 * batches by LMDB's write thread, and a checkpoint reads an LMDB read transaction while processing continues.
 * @example
 * import { lmdbStateBackend } from 'weir/node';
 * createJob({ name: 'sessions', stateBackend: lmdbStateBackend({ path: '/var/tmp/weir' }) });
 */
export function lmdbStateBackend(options: LmdbStateBackendOptions = {}): StateBackend {
  const { path = tmpdir(), mapSize, writeBatch = FLUSH_AFTER_WRITES } = options;
  if (!(Number.isSafeInteger(writeBatch) && writeBatch > 0)) {
    throw new RangeError(`lmdbStateBackend: writeBatch must be a positive number of writes, not ${String(writeBatch)}`);
  }
  if (typeof path !== 'string' || path === '') throw new TypeError(`lmdbStateBackend: path must be a directory path, not ${JSON.stringify(path)}`);
  if (mapSize !== undefined && !(Number.isSafeInteger(mapSize) && mapSize > 0)) {
    throw new RangeError(`lmdbStateBackend: mapSize must be a positive number of bytes, not ${String(mapSize)}`);
  }
  // The first backend made removes the working directories that killed processes left under `path`.
  let swept = false;
  return withStateTtl({
    name: 'lmdb',
    createKeyedBackend: ({ uid, maxParallelism, keyGroupRange, onStateRegistered, trackChanges }) => {
      if (!swept) {
        swept = true;
        removeAbandonedWorkingDirectories(path);
      }
      return new LmdbKeyedStateBackend(uid, maxParallelism, keyGroupRange, { path, mapSize, writeBatch, onStateRegistered, trackChanges: trackChanges ?? false });
    },
  });
}

/** One state of the backend, by name: restored, registered, or both. */
interface Slot {
  readonly id: number;
  /** How the state's rows are written now. */
  meta: StateMeta;
  /** Set once a descriptor registered the state. */
  descriptor?: StateDescriptor<unknown>;
  rows?: ValueRows<unknown> | MapRows<unknown, unknown>;
  /**
   * Restored rows that need work before a descriptor can read them: map states are restored as one row per user
   * key holding the whole map, and rows of another serializer version must be re-encoded.
   */
  needsAdoption: boolean;
  /** The types of the restored keys (`typeof`), checked against the job's keys when the state is first used. */
  keyTypes?: Set<string>;
}

class LmdbKeyedStateBackend implements KeyedStateBackend, RowStore {
  /** This instance's working directory: created here, removed by `dispose`, never shared. */
  readonly directory: string;
  readonly db: StateDatabase;
  readonly keys = new KeyWriter();
  private key: Key | undefined;
  namespace = '';
  private groupKey: Key | undefined;
  private group = 0;
  private readonly slots = new Map<string, Slot>();
  private readonly registry: StateRegistry<Slot>;
  private readonly batches: WriteBatches;
  private readonly snapshots = new Set<KeyedSnapshot>();
  private disposed = false;

  constructor(
    private readonly uid: string,
    private readonly maxParallelism: number,
    private readonly range: KeyGroupRange,
    private readonly options: {
      path: string;
      mapSize: number | undefined;
      writeBatch: number;
      trackChanges: boolean;
      onStateRegistered: ((descriptor: StateDescriptor<unknown>) => void) | undefined;
    },
  ) {
    mkdirSync(options.path, { recursive: true });
    this.directory = mkdtempSync(workingDirectoryPrefix(options.path));
    this.registry = new StateRegistry(uid, options.onStateRegistered, (descriptor) => this.createSlot(descriptor));
    this.batches = new WriteBatches({ uid, directory: this.directory, maxParallelism, writeBatch: options.writeBatch });
    // Working state is rebuilt from a checkpoint after a crash, so it needs no durability: no fsync, no compression.
    this.db = lmdb().open<unknown, Buffer>({
      path: this.directory,
      keyEncoding: 'binary',
      encoding: 'msgpack',
      // Without it every row carries its object's field names, and every read parses them again.
      sharedStructuresKey: STRUCTURES_ROW,
      compression: false,
      noSync: true,
      overlappingSync: false,
      ...(options.mapSize === undefined ? {} : { mapSize: options.mapSize }),
    });
  }

  setCurrentKey(key: Key): void {
    this.key = key;
  }

  getCurrentKey(): Key | undefined {
    return this.key;
  }

  setCurrentNamespace(namespace: string): void {
    this.namespace = namespace;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  mergeNamespaces(descriptor: StateDescriptor<unknown, any>, target: string, sources: readonly string[]): void {
    const { rows } = this.register(descriptor);
    const key = this.currentKey(descriptor.name);
    if (rows instanceof MapRows) {
      // Entries of later sources win, as with the heap backend's Map merge.
      for (const source of sources) {
        for (const [mapKey, value] of rows.entries(key, source)) rows.put(key, mapKey, value, target);
        rows.clear(key, source);
      }
      return;
    }
    const values = rows!;
    let merged = values.get(key, target);
    for (const source of sources) {
      const value = values.get(key, source);
      if (value === undefined) continue;
      merged = merged === undefined ? value : mergeStateValues(descriptor, merged, value);
      values.delete(key, source);
    }
    if (merged !== undefined) values.set(key, merged, target);
  }

  currentKey(stateName: string): Key {
    return this.key ?? requireKey(undefined, stateName);
  }

  keyGroup(key: Key): number {
    if (key !== this.groupKey) {
      this.groupKey = key;
      this.group = keyGroupOf(key, this.maxParallelism);
    }
    return this.group;
  }

  wrote(): void {
    this.batches.wrote();
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  getState<S>(descriptor: StateDescriptor<S, any>): S {
    return this.registry.state(descriptor as StateDescriptor<unknown>, (slot, first) => this.createState(slot, first) as S);
  }

  private createState(slot: Slot, descriptor: StateDescriptor<unknown>): unknown {
    switch (descriptor.kind) {
      case 'value':
        return new LmdbValueState(this, slot.rows as ValueRows<unknown>, descriptor);
      case 'list':
        return new LmdbListState(this, slot.rows as ValueRows<unknown[]>, descriptor.name);
      case 'map':
        return new LmdbMapState(this, slot.rows as MapRows<unknown, unknown>, descriptor.name);
      case 'reducing':
        return new LmdbReducingState(this, slot.rows as ValueRows<unknown>, descriptor);
      case 'aggregating':
        return new LmdbAggregatingState(this, slot.rows as ValueRows<unknown>, descriptor);
    }
  }

  private register(descriptor: StateDescriptor<unknown>): Slot {
    return this.registry.register(descriptor);
  }

  /** The slot of a state registered now: its restored rows (adopted if need be), or new ones. */
  private createSlot(descriptor: StateDescriptor<unknown>): Slot {
    let slot = this.slots.get(descriptor.name);
    // A descriptor that does not fit restored state is rejected before it takes the name.
    if (slot !== undefined) {
      checkRestoredMeta(this.uid, slot.meta, descriptor);
      if (slot.keyTypes && this.key !== undefined) checkKeyType(this.uid, descriptor.name, slot.keyTypes, this.key);
      if (needsMigration(slot.meta, descriptor)) slot.needsAdoption = true;
    }
    if (slot === undefined) this.slots.set(descriptor.name, (slot = { id: this.slots.size, meta: metaOf(descriptor), needsAdoption: false }));
    const rows =
      descriptor.kind === 'map'
        ? new MapRows(this, slot.id, descriptor.serializer as never, this.options.trackChanges)
        : new ValueRows(this, slot.id, descriptor.serializer, this.options.trackChanges);
    if (slot.needsAdoption) {
      const { db, keys, range } = this;
      adoptRestoredRows({ db, keys, range }, slot.id, slot.meta, rows, descriptor);
      slot.needsAdoption = false;
    }
    slot.descriptor = descriptor;
    slot.meta = metaOf(descriptor);
    slot.rows = rows;
    if (rows instanceof ValueRows) this.batches.add(rows);
    return slot;
  }

  snapshot(): KeyedSnapshot {
    this.checkOpen();
    this.batches.flush();
    const states: SnapshotState[] = Array.from(this.slots.values(), (slot) => ({
      id: slot.id,
      meta: slot.meta,
      mapRows: slot.rows instanceof MapRows && !slot.needsAdoption ? slot.rows : undefined,
      // Taken at every snapshot, so that the next one's delta starts here.
      changes: slot.rows?.takeChanges(),
      inFlight: slot.rows instanceof ValueRows ? slot.rows.inFlight() : undefined,
    }));
    const groupOf = (key: Key) => keyGroupOf(key, this.maxParallelism);
    const snapshot = lmdbSnapshot(this.db, states, groupOf, () => this.snapshots.delete(snapshot), this.options.trackChanges);
    this.snapshots.add(snapshot);
    return snapshot;
  }

  restore(payloads: KeyedStatePayload[]): void {
    this.checkOpen();
    const { uid, db, keys, maxParallelism, range } = this;
    restoreRows({ uid, db, keys, maxParallelism, range }, payloads, (meta) => this.restoredSlot(meta));
  }

  /** The slot restored rows of `meta` go to. Restore comes before any state is read, as in a job's attempt. */
  private restoredSlot(meta: StateMeta): Slot {
    const slot = this.slots.get(meta.name);
    if (slot === undefined) {
      const restored: Slot = { id: this.slots.size, meta, needsAdoption: meta.kind === 'map' };
      this.slots.set(meta.name, restored);
      return restored;
    }
    if (slot.descriptor !== undefined) {
      throw new Error(`operator '${this.uid}': the LMDB state backend restores state before state '${meta.name}' is first used, not after`);
    }
    return slot;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  *keysOf(descriptor: StateDescriptor<unknown, any>, namespace = ''): Iterable<Key> {
    const { id, rows: table } = this.register(descriptor);
    // Keys whose newest write LMDB may not hold yet: they come from the write buffers, not from LMDB's rows.
    const written = table instanceof ValueRows ? table.written().get(namespace) : undefined;
    // One key group at a time, so that no read transaction stays open while the caller yields to processing.
    for (let keyGroup = this.range.start; keyGroup <= this.range.end; keyGroup++) {
      this.checkOpen();
      const writer = this.keys.begin(keyGroup, id);
      const rows = Array.from(this.db.getKeys({ start: Buffer.from(writer.key()), end: writer.rangeEnd() }), (row) => Buffer.from(row));
      let last: Key | undefined;
      for (const row of rows) {
        const { value: key, next } = readKeyPart(row, PREFIX_BYTES);
        if (readNamespace(row, next).value !== namespace || written?.has(key)) continue;
        // Map state has one row per map entry: a user key's rows in one namespace are contiguous.
        if (key !== last) yield key;
        last = key;
      }
    }
    for (const [key, holdsValue] of written ?? []) if (holdsValue) yield key;
  }

  peek<STORED>(descriptor: StateDescriptor<unknown, STORED>, key: Key, namespace = ''): STORED | undefined {
    this.checkOpen();
    const { rows } = this.register(descriptor as StateDescriptor<unknown>);
    if (rows instanceof MapRows) {
      const entries = rows.entries(key, namespace);
      return entries.length === 0 ? undefined : (new Map(entries) as STORED);
    }
    const value = rows!.get(key, namespace);
    // A value still in the write buffer is the live object that later records mutate: the caller gets a copy.
    return value === undefined ? undefined : (copyValue(value) as STORED);
  }

  /**
   * LMDB's own count of rows (O(1), one per entry, map entry or list) plus the rows still in the write buffers, which
   * LMDB may not hold yet (bounded by the batch size): approximate, as a buffered row LMDB holds already counts twice,
   * and a few bookkeeping rows count too.
   */
  stateEntries(): number {
    this.checkOpen();
    let buffered = 0;
    for (const rows of this.batches.rows) for (const keys of rows.written().values()) for (const live of keys.values()) if (live) buffered++;
    return (this.db.getStats() as { entryCount: number }).entryCount + buffered;
  }

  keyCount(): number {
    this.checkOpen();
    // Rows whose newest write LMDB may not hold yet are counted from the write buffers instead.
    const written = new Map(this.batches.rows.map((rows) => [rows.id, rows.written()]));
    const keys = new Set<string>();
    for (const row of this.db.getKeys({ end: STRUCTURES_ROW })) {
      const { value: key, next } = readKeyPart(row, PREFIX_BYTES);
      if (written.get(stateIdOfRow(row))?.get(readNamespace(row, next).value)?.has(key)) continue;
      keys.add(row.toString('latin1', PREFIX_BYTES, next));
    }
    for (const byNamespace of written.values()) {
      for (const namespaceKeys of byNamespace.values()) {
        for (const [key, holdsValue] of namespaceKeys) if (holdsValue) keys.add(this.keys.begin(0, 0).add(key).key().toString('latin1', PREFIX_BYTES));
      }
    }
    return keys.size;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const snapshot of Array.from(this.snapshots)) snapshot.release();
    this.slots.clear();
    this.registry.clear();
    this.batches.dispose();
    // Closing waits for the flushes LMDB's write thread has not committed; the directory goes now (its files stay
    // open until then), and nothing reads them again.
    void this.db.close();
    rmSync(this.directory, { recursive: true, force: true });
  }

  private checkOpen(): void {
    if (this.disposed) throw new Error(`operator '${this.uid}': the LMDB state backend was disposed`);
  }
}

