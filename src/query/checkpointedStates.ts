import { METADATA_FILE, checkpointDir } from '../storage/layout.js';
import { CheckpointNotFoundError, JobDefinitionError } from '../core/errors.js';
import type { CheckpointStorage, Key } from '../core/types.js';
import { decodeKey } from '../state/keyCodec.js';
import { forEachPayloadEntry } from '../state/payloadEntries.js';
import { checkRestoredMeta } from '../state/stateChecks.js';
import { readSavepoint } from '../stateProcessor/readSavepoint.js';
import type { QueryableStateEntry } from './queryableStateRegistry.js';

/** Checkpointed states kept decoded for `asOf` queries. */
const CACHED_CHECKPOINT_STATES = 4;

/** One state of one checkpoint, indexed by key: encoded values and the serializer version they were written with. */
export interface CheckpointedState {
  readonly version: number;
  readonly values: Map<Key, unknown>;
}

/**
 * Queryable states as of a retained checkpoint (`asOf` queries), read from the job's storage and kept decoded for the
 * few most recently asked.
 */
export class CheckpointedStates {
  private readonly cache = new Map<string, Promise<CheckpointedState>>();

  constructor(
    private readonly job: string,
    private readonly storage: CheckpointStorage | undefined,
  ) {}

  /** State `entry` as of checkpoint `id`, which must be complete and still retained. */
  async get(entry: QueryableStateEntry, id: number): Promise<CheckpointedState> {
    const { storage, job } = this;
    if (!storage) throw new JobDefinitionError(`job '${job}' has checkpointing off, so there is no checkpoint ${id} to query`);
    const dir = checkpointDir(job, id);
    // Retention may have deleted it since it was cached.
    if (!(await storage.list(dir)).includes(METADATA_FILE)) {
      throw new CheckpointNotFoundError(`checkpoint ${id} of job '${job}' is not complete or no longer retained; query a newer checkpoint or the live state`);
    }
    const cacheKey = `${id}\u0000${entry.uid}\u0000${entry.descriptor.name}`;
    let state = this.cache.get(cacheKey);
    if (state === undefined) {
      state = this.loadState(storage, dir, entry);
      this.cache.set(cacheKey, state);
      state.catch(() => this.cache.delete(cacheKey));
      if (this.cache.size > CACHED_CHECKPOINT_STATES) this.cache.delete(this.cache.keys().next().value!);
    }
    return state;
  }

  private async loadState(storage: CheckpointStorage, dir: string, { uid, descriptor }: QueryableStateEntry): Promise<CheckpointedState> {
    // Through the State Processor API: an incremental checkpoint's state is its base with the deltas applied.
    const checkpoint = await readSavepoint(storage, dir);
    const values = new Map<Key, unknown>();
    let version = descriptor.serializer.version;
    const saved = checkpoint.operators.some((operator) => operator.uid === uid);
    for await (const keyed of saved ? checkpoint.keyedPayloads(uid) : []) {
      const index = keyed.states.findIndex((meta) => meta.name === descriptor.name);
      if (index < 0) continue;
      const meta = keyed.states[index]!;
      checkRestoredMeta(uid, meta, descriptor);
      version = meta.serializerVersion;
      forEachPayloadEntry(keyed, { maxParallelism: checkpoint.maxParallelism }, ([state, key, value, namespace]) => {
        if (state === index && (namespace === undefined || namespace === '')) values.set(decodeKey(key), value);
      });
    }
    return { version, values };
  }
}
