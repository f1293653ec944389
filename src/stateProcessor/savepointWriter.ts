import type { ProgressListener } from '../core/progress.js';
import { encodeFile } from '../storage/fileFormat.js';
import { METADATA_FILE, stateFileName, type CheckpointMetadata, type StateFileEntry } from '../storage/layout.js';
import { CheckpointNotFoundError, JobDefinitionError, StateMigrationError } from '../core/errors.js';
import { DEFAULT_MAX_PARALLELISM, keyGroupOf, keyGroupRangeFor } from '../core/keyGroups.js';
import type { CheckpointStorage, Key, SnapshotEntry, StateClock, StateDescriptor } from '../core/types.js';
import { checkKey, decodeKey, encodeKey } from '../state/keyCodec.js';
import { metaOf } from '../state/stateChecks.js';
import { splitStamped } from '../state/ttl/ttlDescriptor.js';
import { addPayload, keyedPayload, newState, subtasksByKeyGroup, type OperatorDraft } from './operatorDraft.js';
import type { SavepointReader } from './readSavepoint.js';
import { restamp, valueDecoder, valueEncoder } from './savedValues.js';
import { serializerById } from './serializerById.js';

export interface CreateSavepointOptions {
  /** The job that will restore it: a restore checks the name. */
  job: string;
  /** Key groups (default 128); the restoring job must have the same. */
  maxParallelism?: number;
  /**
   * The time values of TTL states are written at (their last access), processing or event time as each descriptor's
   * TTL says, as a job's scheduler and watermarks give it; the wall clock (`Date.now()`) for both by default.
   */
  clock?: StateClock;
}

/** A job's processing time on its default scheduler; offline, event time has no watermark to go by, so it is the same. */
const WALL_CLOCK: StateClock = { processingTime: () => Date.now(), eventTime: () => Date.now() };

/**
 * Builds a savepoint offline: bootstraps keyed state for a new job, or changes one read with `readSavepoint`
 * (`derive()`): operators removed, renamed (state re-assigned to another uid), states added or transformed. The
 * result is an ordinary savepoint: `job.start({ restore: { savepoint: path, storage } })` restores it.
 * @example
 * await createSavepoint({ job: 'clicks' })
 *   .withKeyedState('per-user', valueState<number>('total'), [['ann', 3], ['bob', 1]])
 *   .write(fsCheckpointStorage('./savepoints'), 'bootstrap');
 */
/** `deriveSavepoint`'s options: the job and clock of the new savepoint, and who hears of each operator read. */
export interface DeriveSavepointOptions extends Partial<Pick<CreateSavepointOptions, 'job' | 'clock'>> {
  /** Hears of each operator read in full (`weir/node`'s `progressBar` draws it on a terminal). */
  onProgress?: ProgressListener;
}

export class SavepointWriter {
  private readonly operators = new Map<string, OperatorDraft>();

  constructor(
    readonly job: string,
    readonly maxParallelism: number,
    private readonly id = 1,
    private readonly clock: StateClock = WALL_CLOCK,
  ) {
    if (!(Number.isInteger(maxParallelism) && maxParallelism >= 1 && maxParallelism <= 32768)) {
      throw new JobDefinitionError(`savepoint of job '${job}': maxParallelism must be an integer from 1 to 32768, got ${maxParallelism}`);
    }
  }

  /** A writer holding everything `reader`'s savepoint holds (its keyed state in memory), to change and write anew. */
  static async derive(reader: SavepointReader, options: DeriveSavepointOptions = {}): Promise<SavepointWriter> {
    const writer = new SavepointWriter(options.job ?? reader.job, reader.maxParallelism, reader.metadata.id, options.clock);
    let done = 0;
    for (const operator of reader.operators) {
      // Operator state is read per instance: a chunked instance has several files, only its first holding it.
      const operatorStates = await reader.operatorState(operator.uid);
      const draft: OperatorDraft = { role: operator.role, parallelism: operator.parallelism, operatorStates, states: new Map() };
      for await (const keyed of reader.keyedPayloads(operator.uid)) addPayload(draft, keyed, writer.maxParallelism);
      writer.operators.set(operator.uid, draft);
      options.onProgress?.({ done: ++done, total: reader.operators.length, file: operator.uid });
    }
    return writer;
  }

  /**
   * Adds keyed state to operator `uid` (created as a keyed operator when new, with `parallelism` instances), replacing
   * a state of the same name. Values are stored as the job would store them: encoded with the descriptor's serializer,
   * and, for a state with a TTL, last accessed now (on the writer's `clock`).
   */
  withKeyedState<V>(
    uid: string,
    descriptor: StateDescriptor<unknown, V>,
    entries: Iterable<readonly [Key, V]>,
    options: { parallelism?: number; namespace?: string } = {},
  ): this {
    const operator = this.operator(uid, options.parallelism);
    const meta = metaOf(descriptor as StateDescriptor<unknown>);
    const draft = newState(operator, meta);
    const { bySubtask, index } = draft;
    const subtaskOf = subtasksByKeyGroup(operator.parallelism, this.maxParallelism);
    const { maxParallelism } = this;
    const encode = valueEncoder(descriptor, this.clock);
    const namespace = options.namespace;
    for (const [key, value] of entries) {
      checkKey(key, uid);
      const encoded = encode(value);
      bySubtask[subtaskOf[keyGroupOf(key, maxParallelism)]!]!.push(namespace ? [index, encodeKey(key), encoded, namespace] : [index, encodeKey(key), encoded]);
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
   * `descriptor` says how to read and write them. A TTL state's values keep their last-access times (see `restamp`).
   */
  transformState(uid: string, name: string, fn: (value: unknown, key: Key) => unknown, descriptor?: StateDescriptor<unknown>): this {
    const state = this.existing(uid).states.get(name);
    if (!state) throw new CheckpointNotFoundError(`savepoint of job '${this.job}': operator '${uid}' has no state '${name}'`);
    const ttl = state.meta.ttl === true;
    if (descriptor && (descriptor.ttl !== undefined) !== ttl) {
      throw new StateMigrationError(
        `savepoint of job '${this.job}': state '${name}' of operator '${uid}' was saved ${ttl ? 'with' : 'without'} a TTL, and the descriptor ` +
          `transforming it has ${ttl ? 'none' : 'one'}; TTL cannot be switched on or off for saved state, as at restore`,
      );
    }
    const decode = valueDecoder(state.meta, descriptor);
    const serializer = descriptor?.serializer ?? serializerById(state.meta.serializer);
    const encodeValue = serializer ? (value: unknown) => serializer.encode(value) : (value: unknown) => value;
    const encode = ttl ? (value: unknown, saved: unknown) => [encodeValue(value), restamp(splitStamped(saved)![1], value)] : encodeValue;
    if (descriptor) state.meta = metaOf(descriptor);
    state.bySubtask = state.bySubtask.map((entries) => {
      const kept: SnapshotEntry[] = [];
      for (const [index, key, value, namespace] of entries) {
        const next = fn(decode(value), decodeKey(key));
        if (next === undefined) continue;
        const encoded = encode(next, value);
        kept.push(namespace === undefined ? [index, key, encoded] : [index, key, encoded, namespace]);
      }
      return kept;
    });
    return this;
  }

  /**
   * Writes the savepoint into directory `path` of `storage`: state files first, `_metadata` last. Returns its path.
   * `onProgress` hears of each file written (`weir/node`'s `progressBar` draws them on a terminal).
   */
  async write(storage: CheckpointStorage, path: string, options: { timestamp?: number; onProgress?: ProgressListener } = {}): Promise<string> {
    const dir = path.replace(/\/+$/, '');
    const operators: CheckpointMetadata['operators'] = [];
    let bytes = 0;
    const fileCount = (operator: OperatorDraft) => (operator.states.size > 0 ? operator.parallelism : Math.max(1, operator.operatorStates.length));
    // The metadata file is the last one.
    const total = [...this.operators.values()].reduce((sum, operator) => sum + fileCount(operator), 1);
    let done = 0;
    // One file is written (and synced) while the next is encoded; each write is awaited before the next starts.
    let writing: Promise<void> | undefined;
    let previous = '';
    try {
      for (const [uid, operator] of this.operators) {
        const keyed = operator.states.size > 0;
        const count = fileCount(operator);
        const files: StateFileEntry[] = [];
        for (let subtask = 0; subtask < count; subtask++) {
          const range = keyed ? keyGroupRangeFor(subtask, count, this.maxParallelism) : undefined;
          const payload = { uid, keyed: range ? keyedPayload(operator, subtask, range) : undefined, operator: operator.operatorStates[subtask] };
          const file = stateFileName(uid, subtask, range);
          const data = encodeFile('state', payload);
          await writing;
          if (writing !== undefined) options.onProgress?.({ done: ++done, total, file: previous });
          previous = file;
          writing = storage.write(`${dir}/${file}`, data);
          bytes += data.length;
          files.push({ file, subtask, keyGroups: range ? [range.start, range.end] : null, bytes: data.length });
        }
        operators.push({ uid, role: operator.role, files });
      }
    } catch (error) {
      await writing?.catch(() => undefined);
      throw error;
    }
    await writing;
    if (writing !== undefined) options.onProgress?.({ done: ++done, total, file: previous });
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
    options.onProgress?.({ done: done + 1, total, file: METADATA_FILE });
    return storage.describe ? storage.describe(dir) : dir;
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

/**
 * Starts a new savepoint for job `job`, to bootstrap its state from data.
 * @example createSavepoint({ job: 'clicks' }).withKeyedState('per-user', totals, entries).write(storage, 'savepoints/bootstrap')
 */
export function createSavepoint(options: CreateSavepointOptions): SavepointWriter {
  return new SavepointWriter(options.job, options.maxParallelism ?? DEFAULT_MAX_PARALLELISM, undefined, options.clock);
}

/**
 * A writer holding everything a savepoint holds, to change and write as a new savepoint.
 * @example (await deriveSavepoint(await readSavepoint(storage, old))).removeOperator('legacy').write(storage, 'savepoints/v2')
 */
export function deriveSavepoint(reader: SavepointReader, options: DeriveSavepointOptions = {}): Promise<SavepointWriter> {
  return SavepointWriter.derive(reader, options);
}
