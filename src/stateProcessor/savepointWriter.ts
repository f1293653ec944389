import { encodeFile } from '../checkpoint/fileFormat';
import { METADATA_FILE, stateFileName, type CheckpointMetadata, type OperatorRole, type StateFileEntry } from '../checkpoint/layout';
import { CheckpointNotFoundError, JobDefinitionError } from '../core/errors';
import { DEFAULT_MAX_PARALLELISM, keyGroupOf, keyGroupRangeFor } from '../core/keyGroups';
import type { CheckpointStorage, Json, Key, KeyedStatePayload, SnapshotEntry, StateDescriptor, StateMeta } from '../core/types';
import { checkKey, decodeKey, encodeKey } from '../state/keyCodec';
import { forEachPayloadEntry } from '../state/payloadEntries';
import { metaOf } from '../state/stateChecks';
import { valueDecoder, type SavepointReader } from './readSavepoint';
import { serializerById } from './serializerById';

/** One keyed state being written: its meta and its encoded entries `[keyGroup, key, value, namespace?]`. */
interface StateDraft {
  meta: StateMeta;
  entries: [number, unknown, unknown, string?][];
}

interface OperatorDraft {
  role: OperatorRole;
  parallelism: number;
  /** Operator (non-keyed) state per instance, as saved. */
  operatorStates: (Json | undefined)[];
  states: Map<string, StateDraft>;
}

export interface CreateSavepointOptions {
  /** The job that will restore it: a restore checks the name. */
  job: string;
  /** Key groups (default 128); the restoring job must have the same. */
  maxParallelism?: number;
}

/**
 * Builds a savepoint offline: bootstraps keyed state for a new job, or changes one read with `readSavepoint`
 * (`derive()`): operators removed, renamed (state re-assigned to another uid), states added or transformed. The
 * result is an ordinary savepoint: `job.start({ restore: { savepoint: path, storage } })` restores it.
 * @example
 * await createSavepoint({ job: 'clicks' })
 *   .withKeyedState('per-user', valueState<number>('total'), [['ann', 3], ['bob', 1]])
 *   .write(fsCheckpointStorage('./savepoints'), 'bootstrap');
 */
export class SavepointWriter {
  private readonly operators = new Map<string, OperatorDraft>();

  constructor(
    readonly job: string,
    readonly maxParallelism: number,
    private readonly id = 1,
  ) {
    if (!(Number.isInteger(maxParallelism) && maxParallelism >= 1 && maxParallelism <= 32768)) {
      throw new JobDefinitionError(`savepoint of job '${job}': maxParallelism must be an integer from 1 to 32768, got ${maxParallelism}`);
    }
  }

  /** A writer holding everything `reader`'s savepoint holds (its keyed state in memory), to change and write anew. */
  static async derive(reader: SavepointReader, options: { job?: string } = {}): Promise<SavepointWriter> {
    const writer = new SavepointWriter(options.job ?? reader.job, reader.maxParallelism, reader.metadata.id);
    for (const operator of reader.operators) {
      const draft: OperatorDraft = { role: operator.role, parallelism: operator.parallelism, operatorStates: [], states: new Map() };
      for await (const payload of reader.payloads(operator.uid)) {
        draft.operatorStates.push(payload.operator);
        if (payload.keyed) addPayload(draft, payload.keyed, writer.maxParallelism);
      }
      writer.operators.set(operator.uid, draft);
    }
    return writer;
  }

  /**
   * Adds keyed state to operator `uid` (created as a keyed operator when new, with `parallelism` instances), replacing
   * a state of the same name. Values are encoded with the descriptor's serializer, as the job would.
   */
  withKeyedState<V>(
    uid: string,
    descriptor: StateDescriptor<unknown, V>,
    entries: Iterable<readonly [Key, V]>,
    options: { parallelism?: number; namespace?: string } = {},
  ): this {
    const operator = this.operator(uid, options.parallelism);
    const meta = metaOf(descriptor as StateDescriptor<unknown>);
    const draft: StateDraft = { meta, entries: [] };
    for (const [key, value] of entries) {
      checkKey(key, uid);
      const encoded = descriptor.serializer.encode(value);
      draft.entries.push(options.namespace ? [keyGroupOf(key, this.maxParallelism), encodeKey(key), encoded, options.namespace] : [keyGroupOf(key, this.maxParallelism), encodeKey(key), encoded]);
    }
    operator.states.set(meta.name, draft);
    return this;
  }

  /** `withKeyedState`, under the name used when changing a derived savepoint. */
  addKeyedState<V>(uid: string, descriptor: StateDescriptor<unknown, V>, entries: Iterable<readonly [Key, V]>, options?: { parallelism?: number; namespace?: string }): this {
    return this.withKeyedState(uid, descriptor, entries, options);
  }

  /** Drops an operator's state (what `allowNonRestoredState` would drop at restore, done once, offline). */
  removeOperator(uid: string): this {
    this.existing(uid);
    this.operators.delete(uid);
    return this;
  }

  /** Re-assigns an operator's state to another uid, for a job whose operator was given a new uid. */
  renameOperator(from: string, to: string): this {
    const operator = this.existing(from);
    if (this.operators.has(to)) throw new JobDefinitionError(`savepoint of job '${this.job}': cannot rename '${from}' to '${to}', which already has state`);
    this.operators.delete(from);
    this.operators.set(to, operator);
    return this;
  }

  /**
   * Rewrites every value of one keyed state: `fn(value, key)` returns the new value, or undefined to drop the key.
   * Values of built-in serializers are decoded first (and encoded again); others are handed over encoded, unless a
   * `descriptor` says how to read and write them.
   */
  transformState(uid: string, name: string, fn: (value: unknown, key: Key) => unknown, descriptor?: StateDescriptor<unknown>): this {
    const state = this.existing(uid).states.get(name);
    if (!state) throw new CheckpointNotFoundError(`savepoint of job '${this.job}': operator '${uid}' has no state '${name}'`);
    const decode = valueDecoder(state.meta, descriptor);
    const serializer = descriptor?.serializer ?? serializerById(state.meta.serializer);
    const encode = serializer ? (value: unknown) => serializer.encode(value) : (value: unknown) => value;
    if (descriptor) state.meta = metaOf(descriptor);
    state.entries = state.entries.flatMap(([group, key, value, namespace]) => {
      const next = fn(decode(value), decodeKey(key));
      if (next === undefined) return [];
      return [namespace === undefined ? [group, key, encode(next)] : [group, key, encode(next), namespace]];
    });
    return this;
  }

  /** Writes the savepoint into directory `path` of `storage`: state files first, `_metadata` last. Returns its path. */
  async write(storage: CheckpointStorage, path: string, options: { timestamp?: number } = {}): Promise<string> {
    const dir = path.replace(/\/+$/, '');
    const operators: CheckpointMetadata['operators'] = [];
    let bytes = 0;
    for (const [uid, operator] of this.operators) {
      const keyed = operator.states.size > 0;
      const count = keyed ? operator.parallelism : Math.max(1, operator.operatorStates.length);
      const files: StateFileEntry[] = [];
      for (let subtask = 0; subtask < count; subtask++) {
        const range = keyed ? keyGroupRangeFor(subtask, count, this.maxParallelism) : undefined;
        const payload = { uid, keyed: range ? this.keyedPayload(operator, range) : undefined, operator: operator.operatorStates[subtask] };
        const file = stateFileName(uid, subtask, range);
        const data = encodeFile('state', payload);
        await storage.write(`${dir}/${file}`, data);
        bytes += data.length;
        files.push({ file, subtask, keyGroups: range ? [range.start, range.end] : null, bytes: data.length });
      }
      operators.push({ uid, role: operator.role, files });
    }
    const metadata: CheckpointMetadata = {
      job: this.job,
      id: this.id,
      kind: 'savepoint',
      timestamp: options.timestamp ?? Date.now(),
      maxParallelism: this.maxParallelism,
      operators,
      stats: { durationMs: 0, bytes, fullSize: bytes, operators: [] },
    };
    await storage.write(`${dir}/${METADATA_FILE}`, encodeFile('metadata', metadata));
    return storage.describe ? storage.describe(dir) : dir;
  }

  /** One instance's keyed payload: its entries unbucketed (format version 2), in the order they were added. */
  private keyedPayload(operator: OperatorDraft, range: { start: number; end: number }): KeyedStatePayload {
    const states = Array.from(operator.states.values());
    const entries: SnapshotEntry[] = [];
    states.forEach((state, index) => {
      const drafts = state.entries;
      for (let i = 0; i < drafts.length; i++) {
        const [group, key, value, namespace] = drafts[i]!;
        if (group < range.start || group > range.end) continue;
        entries.push(namespace === undefined ? [index, key, value] : [index, key, value, namespace]);
      }
    });
    return { states: states.map((state) => state.meta), keyGroups: [], entries, range: [range.start, range.end] };
  }

  private operator(uid: string, parallelism = 1): OperatorDraft {
    let operator = this.operators.get(uid);
    if (!operator) this.operators.set(uid, (operator = { role: 'operator', parallelism, operatorStates: [], states: new Map() }));
    return operator;
  }

  private existing(uid: string): OperatorDraft {
    const operator = this.operators.get(uid);
    if (!operator) throw new CheckpointNotFoundError(`savepoint of job '${this.job}' has no operator '${uid}'`);
    return operator;
  }
}

/** Adds a saved keyed payload's entries to an operator draft, re-bucketed by state. */
function addPayload(draft: OperatorDraft, payload: KeyedStatePayload, maxParallelism: number): void {
  const states = payload.states.map((meta) => {
    let state = draft.states.get(meta.name);
    if (!state) draft.states.set(meta.name, (state = { meta, entries: [] }));
    return state;
  });
  forEachPayloadEntry(payload, { maxParallelism, keyGroups: true }, ([index, key, value, namespace], group) => {
    states[index]!.entries.push(namespace === undefined ? [group, key, value] : [group, key, value, namespace]);
  });
}

/**
 * Starts a new savepoint for job `job`, to bootstrap its state from data.
 * @example createSavepoint({ job: 'clicks' }).withKeyedState('per-user', totals, entries).write(storage, 'savepoints/bootstrap')
 */
export function createSavepoint(options: CreateSavepointOptions): SavepointWriter {
  return new SavepointWriter(options.job, options.maxParallelism ?? DEFAULT_MAX_PARALLELISM);
}

/**
 * A writer holding everything a savepoint holds, to change and write as a new savepoint.
 * @example (await deriveSavepoint(await readSavepoint(storage, old))).removeOperator('legacy').write(storage, 'savepoints/v2')
 */
export function deriveSavepoint(reader: SavepointReader, options: { job?: string } = {}): Promise<SavepointWriter> {
  return SavepointWriter.derive(reader, options);
}
