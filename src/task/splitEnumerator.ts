import { CheckpointCorruptedError, JobDefinitionError } from '../core/errors.js';
import type { Json, SourceSplit, SourceSplits, SplitState } from '../core/types.js';

/** A split given to a subtask, with where to resume it. */
export interface AssignedSplit {
  readonly split: SourceSplit;
  /** The offset to resume at; `null` to read the split from its start. */
  readonly offset: Json;
  readonly finished: boolean;
}

/** The offset a split-reading subtask saves: the state of every split assigned to it. */
export interface SavedSplits {
  splits: SplitState[];
}

export interface EnumeratorOptions {
  /** The source's uid and name, for messages. */
  readonly uid: string;
  readonly name: string;
  readonly splits: readonly SourceSplit[];
  readonly parallelism: number;
  /** The offset each subtask saved in the checkpoint being restored, at whatever parallelism it ran then. */
  readonly restored: readonly Json[];
  readonly fromOffset?: SourceSplits<unknown>['fromOffset'];
}

/**
 * The split enumerator (Flink's SplitEnumerator, on one side of the job): gathers the split states every subtask
 * saved, at any parallelism, and assigns split k to subtask k mod `parallelism`, finished splits included, so that
 * each subtask keeps saving them and a later restore does not read them again. The assignment depends only on the
 * split list and the parallelism, so every worker that builds the same job computes the same one, and a user who
 * lays splits out by key knows which subtask reads which keys.
 */
export function assignSplits(options: EnumeratorOptions): AssignedSplit[][] {
  const { splits, parallelism } = options;
  const saved = savedStates(options);
  const known = new Set(splits.map((split) => split.id));
  for (const id of saved.keys()) {
    if (!known.has(id)) {
      throw new JobDefinitionError(
        `source '${options.uid}' (${options.name}): the checkpoint holds split '${id}', which the source no longer has; ` +
          'keep the same splits (the number of splits, the files) when restoring, the parallelism may change, or start the job without restore',
      );
    }
  }
  const assigned = Array.from({ length: parallelism }, (): AssignedSplit[] => []);
  splits.forEach((split, k) => {
    const state = saved.get(split.id);
    assigned[k % parallelism]!.push({ split, offset: state?.offset ?? null, finished: state?.finished ?? false });
  });
  return assigned;
}

/** Every saved split state by id; a checkpoint of the source's single reader goes through `fromOffset`. */
function savedStates({ uid, name, splits, restored, fromOffset }: EnumeratorOptions): Map<string, SplitState> {
  const corrupted = (what: string) => new CheckpointCorruptedError(`source '${uid}' (${name}): the checkpoint's split state ${what}`);
  const states = new Map<string, SplitState>();
  for (const offset of restored) {
    let list: SplitState[];
    if (offset !== null && typeof offset === 'object' && !Array.isArray(offset) && 'splits' in offset) {
      const saved = offset.splits;
      if (!Array.isArray(saved)) throw corrupted(`is ${JSON.stringify(saved)}, not a list of splits`);
      list = saved.map((state) => splitState(state, corrupted));
    } else if (fromOffset) {
      list = fromOffset(offset, splits, { uid });
    } else {
      throw corrupted(
        `is the offset ${JSON.stringify(offset)} of a source without splits, which this source cannot map to its splits; start the job without restore`,
      );
    }
    for (const state of list) {
      if (states.has(state.id)) throw corrupted(`names split '${state.id}' twice`);
      states.set(state.id, state);
    }
  }
  return states;
}

function splitState(state: Json, corrupted: (what: string) => Error): SplitState {
  if (state === null || typeof state !== 'object' || Array.isArray(state)) throw corrupted(`holds ${JSON.stringify(state)}, not a split`);
  const { id, offset, finished } = state;
  if (typeof id !== 'string' || typeof finished !== 'boolean' || offset === undefined) {
    throw corrupted(`holds ${JSON.stringify(state)}, not { id, offset, finished }`);
  }
  return { id, offset, finished };
}
