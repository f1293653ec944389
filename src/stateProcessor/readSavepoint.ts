import { decodeFile } from '../storage/fileFormat.js';
import { checkMetadata, readStateFile } from '../checkpoint/loadCheckpoint.js';
import {
  METADATA_FILE,
  isIncremental,
  restoreOrder,
  type CheckpointMetadata,
  type OperatorRole,
  type OperatorStatePayload,
  type StateFileEntry,
} from '../storage/layout.js';
import { CheckpointNotFoundError } from '../core/errors.js';
import type { CheckpointStorage, Json, Key, KeyedStatePayload, StateDescriptor, StateKind } from '../core/types.js';
import { decodeKey } from '../state/keyCodec.js';
import { forEachPayloadEntry } from '../state/payloadEntries.js';
import { restoredPayload } from '../state/restoredPayload.js';
import { BatchedGenerator } from './batchedGenerator.js';
import { valueDecoder } from './savedValues.js';

/** One operator of a savepoint, as its `_metadata` lists it. */
export interface SavepointOperator {
  readonly uid: string;
  readonly role: OperatorRole;
  /** Instances (state files) it was saved with. */
  readonly parallelism: number;
  /** The key-group range of each instance's keyed state, by subtask; empty for an operator without keyed state. */
  readonly keyGroupRanges: [number, number][];
}

/** One state of an operator: what a restore checks against the descriptor that reads it. */
export interface SavepointState {
  readonly name: string;
  readonly kind: StateKind;
  readonly serializer: string;
  readonly serializerVersion: number;
  /** The descriptor's schema version (1 unless raised). */
  readonly version: number;
}

export interface KeyedStateReadOptions {
  /** Only this key group. */
  keyGroup?: number;
  /** The namespace (a window, as the window operator names it); `''`, state not scoped to a window, by default. */
  namespace?: string;
  /**
   * Decodes values with this descriptor's serializer (and migrates older versions with its `migrate`). Without it,
   * values of a built-in serializer (`json`, `superjson`, `auto`, `map(…)`) are decoded, others given as encoded.
   */
  descriptor?: StateDescriptor<unknown>;
}

/**
 * A savepoint (or checkpoint) opened for reading without the job's code: Flink's State Processor API. Works on any
 * `CheckpointStorage`, in Node and the browser. Files are read when asked for, one at a time.
 * @example
 * const savepoint = await readSavepoint(fsCheckpointStorage('.'), stats.path);
 * for await (const [user, total] of savepoint.keyedState('per-user', 'reduce')) console.log(user, total);
 */
export class SavepointReader {
  private constructor(
    readonly storage: CheckpointStorage,
    readonly path: string,
    readonly metadata: CheckpointMetadata,
  ) {}

  /** Reads and checks `_metadata` of the savepoint in directory `path`. */
  static async open(storage: CheckpointStorage, path: string): Promise<SavepointReader> {
    const where = describe(storage, `${path}/${METADATA_FILE}`);
    const bytes = await storage.read(`${path}/${METADATA_FILE}`).catch((error: unknown) => {
      if (error instanceof CheckpointNotFoundError) throw new CheckpointNotFoundError(`no savepoint at ${where}: the directory has no _metadata`, { cause: error });
      throw error;
    });
    return new SavepointReader(storage, path, checkMetadata(decodeFile('metadata', bytes, where), where));
  }

  get job(): string {
    return this.metadata.job;
  }

  get maxParallelism(): number {
    return this.metadata.maxParallelism;
  }

  get operators(): SavepointOperator[] {
    return this.metadata.operators.map(({ uid, role, files }) => {
      const instances = bySubtask(files);
      return { uid, role, parallelism: instances.length, keyGroupRanges: instances.flatMap(({ keyGroups }) => (keyGroups ? [keyGroups] : [])) };
    });
  }

  /**
   * What each instance of `uid` saved, in subtask order: the payload of each of its state files, read one at a time
   * (only the first file of a chunked instance holds its operator state: `operatorState` gives one per instance),
   * or, in an incremental checkpoint, one payload per instance (its files read together) holding its keyed state as a
   * restore sees it (the base with the deltas applied) and the operator state of its own files.
   */
  async *payloads(uid: string, keyGroup?: number): AsyncGenerator<OperatorStatePayload> {
    const incremental = isIncremental(this.operator(uid).files);
    for (const { files, keyGroups } of this.instances(uid, keyGroup)) {
      if (!incremental) {
        for (const entry of files) yield await this.read(uid, entry);
        continue;
      }
      const carrier = operatorStateFile(files);
      let operator: Json | undefined;
      const keyed: KeyedStatePayload[] = [];
      for (const entry of files) {
        const payload = await this.read(uid, entry);
        if (entry === carrier) operator = payload.operator;
        if (payload.keyed) keyed.push(payload.keyed);
      }
      const range = keyGroup === undefined ? keyGroups && { start: keyGroups[0], end: keyGroups[1] } : { start: keyGroup, end: keyGroup };
      const restored = range && keyed.length > 0 ? restoredPayload(keyed, { uid, maxParallelism: this.maxParallelism, range }) : undefined;
      yield { uid, ...(restored ? { keyed: restored } : {}), ...(operator === undefined ? {} : { operator }) };
    }
  }

  /** The keyed states of an operator (every state any of its files declares). */
  async states(uid: string): Promise<SavepointState[]> {
    const states = new Map<string, SavepointState>();
    for (const entry of [...this.operator(uid).files].sort((a, b) => a.subtask - b.subtask)) {
      for (const meta of (await this.read(uid, entry)).keyed?.states ?? []) {
        if (!states.has(meta.name)) states.set(meta.name, { ...meta, version: meta.version ?? 1 });
      }
    }
    return Array.from(states.values());
  }

  /**
   * The `[key, value]` pairs of one keyed state, key group by key group.
   * @example for await (const [key, value] of savepoint.keyedState('fraud-detector', 'last-was-small')) …
   */
  keyedState(uid: string, name: string, options: KeyedStateReadOptions = {}): AsyncGenerator<[Key, unknown], void, undefined> {
    return new BatchedGenerator(this.keyedStateBatches(uid, name, options));
  }

  /** `keyedState`'s pairs, a payload at a time. */
  private async *keyedStateBatches(uid: string, name: string, options: KeyedStateReadOptions): AsyncGenerator<[Key, unknown][], void, undefined> {
    const namespace = options.namespace ?? '';
    for await (const { keyed } of this.payloads(uid, options.keyGroup)) {
      if (!keyed) continue;
      const index = keyed.states.findIndex((meta) => meta.name === name);
      if (index < 0) continue;
      const decode = valueDecoder(keyed.states[index]!, options.descriptor);
      const range = options.keyGroup === undefined ? undefined : { start: options.keyGroup, end: options.keyGroup };
      const pairs: [Key, unknown][] = [];
      forEachPayloadEntry(keyed, { maxParallelism: this.maxParallelism, range }, (entry) => {
        if (entry[0] === index && (entry[3] ?? '') === namespace) pairs.push([decodeKey(entry[1]), decode(entry[2])]);
      });
      if (pairs.length > 0) yield pairs;
    }
  }

  /** The operator (non-keyed) state each instance saved, by subtask: a source's offset, a sink's transaction. */
  async operatorState(uid: string): Promise<(Json | undefined)[]> {
    const states: (Json | undefined)[] = [];
    // One file per instance is read, whatever the size of its keyed state.
    for (const { files } of this.instances(uid)) {
      const carrier = operatorStateFile(files);
      states.push(carrier && (await this.read(uid, carrier)).operator);
    }
    return states;
  }

  /** The keyed payloads of an operator, for writers deriving a savepoint. */
  async *keyedPayloads(uid: string): AsyncGenerator<KeyedStatePayload> {
    for await (const { keyed } of this.payloads(uid)) if (keyed) yield keyed;
  }

  /**
   * The instances of `uid` in subtask order, each with its files (those covering `keyGroup`, if given) in the order a
   * restore applies them; an instance without such files is left out.
   */
  private instances(uid: string, keyGroup?: number): (Instance & { files: StateFileEntry[] })[] {
    const { files } = this.operator(uid);
    const order = restoreOrder(files, this.metadata.id).map((index) => files[index]!);
    const covers = (entry: StateFileEntry) => keyGroup === undefined || (entry.keyGroups !== null && keyGroup >= entry.keyGroups[0] && keyGroup <= entry.keyGroups[1]);
    return bySubtask(files)
      .map((instance) => ({ ...instance, files: order.filter((entry) => entry.subtask === instance.subtask && covers(entry)) }))
      .filter((instance) => instance.files.length > 0);
  }

  private operator(uid: string): CheckpointMetadata['operators'][number] {
    const operator = this.metadata.operators.find((candidate) => candidate.uid === uid);
    if (operator) return operator;
    throw new CheckpointNotFoundError(
      `${describe(this.storage, this.path)} holds no operator '${uid}'; it has ${this.metadata.operators.map((o) => `'${o.uid}'`).join(', ') || 'none'}`,
    );
  }

  private async read(uid: string, entry: StateFileEntry): Promise<OperatorStatePayload> {
    return (await readStateFile(this.storage, this.path, this.metadata.id, uid, entry)).payload;
  }
}

/**
 * Opens a savepoint (or a checkpoint directory) for reading: its operators, their states, keyed state as async
 * iterables of `[key, value]`, operator state.
 * @example const savepoint = await readSavepoint(fsCheckpointStorage('./savepoints'), 'savepoint-clicks-3-1a2b3c4d');
 */
export function readSavepoint(storage: CheckpointStorage, path: string): Promise<SavepointReader> {
  return SavepointReader.open(storage, path.replace(/\/+$/, ''));
}

/** One instance of an operator in a savepoint: its subtask, and the key groups its files cover (null: no keyed state). */
interface Instance {
  readonly subtask: number;
  readonly keyGroups: [number, number] | null;
}

/** The instances an operator's files belong to, by subtask (a chunked or incremental instance has several files). */
function bySubtask(files: readonly StateFileEntry[]): Instance[] {
  const instances = new Map<number, [number, number] | null>();
  for (const { subtask, keyGroups } of files) {
    const known = instances.get(subtask) ?? null;
    instances.set(subtask, keyGroups === null ? known : known === null ? keyGroups : [Math.min(known[0], keyGroups[0]), Math.max(known[1], keyGroups[1])]);
  }
  return Array.from(instances, ([subtask, keyGroups]) => ({ subtask, keyGroups })).sort((a, b) => a.subtask - b.subtask);
}

/**
 * The file of an instance (its `files` in restore order) that carries its operator state: the first of its own, as
 * the snapshot writer puts operator state into the first file of a chunked instance; a file shared from an earlier
 * checkpoint (incremental) carries that checkpoint's operator state, not this one's.
 */
function operatorStateFile(files: readonly StateFileEntry[]): StateFileEntry | undefined {
  return files.find((entry) => entry.checkpoint === undefined);
}

export function describe(storage: CheckpointStorage, path: string): string {
  return storage.describe ? storage.describe(path) : `${storage.location}: ${path}`;
}
