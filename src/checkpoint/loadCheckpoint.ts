import { CheckpointCorruptedError, CheckpointNotFoundError, ForeignCheckpointError } from '../core/errors.js';
import type { CheckpointStorage, Json, KeyGroupRange, KeyedStatePayload } from '../core/types.js';
import { checkStatePayload, stateFileEntryProblem } from './checkPayloads.js';
import { readStored } from '../storage/readStored.js';
import { checkFile, decodeFile, type CheckedPayload } from '../storage/fileFormat.js';
import {
  METADATA_FILE,
  checkpointDir,
  checkpointIdOf,
  restoreOrder,
  stateFilePath,
  type CheckpointMetadata,
  type OperatorStatePayload,
  type StateFileEntry,
} from '../storage/layout.js';

/** A checkpoint read back and fully checked: every file present, every checksum right. */
export interface LoadedCheckpoint {
  path: string;
  /** The storage it was read from (a worker thread reads it again there, through the main thread). */
  storage?: CheckpointStorage;
  metadata: CheckpointMetadata;
  /** What each operator saved, by operator uid. */
  states: Map<string, RestoredOperator>;
}

/**
 * One operator's saved state. Operator (non-keyed) state is small and held in memory; keyed state can be larger
 * than memory, so files past a budget are checked at load, dropped, and read again one at a time by `keyed`.
 */
export interface RestoredOperator {
  /** The operator state of every file, in file order (undefined for a file without). */
  readonly operators: (Json | undefined)[];
  /** Whether any file holds keyed state. */
  readonly hasKeyed: boolean;
  /** The keyed payloads of the files whose key groups meet one of `ranges` (all by default), one file at a time. */
  keyed(ranges?: readonly KeyGroupRange[]): AsyncIterable<KeyedStatePayload>;
}

/**
 * Decoded state files kept in memory from load to restore, in file bytes per checkpoint. The rest is checked at load
 * (checksum and all, but not parsed) and read again, and parsed once, when restored.
 */
const KEEP_LOADED_BYTES = 16 * 1024 * 1024;

/**
 * The `code` of a storage error that says a path cannot name a checkpoint's file at all (too long for the file
 * system, a directory, a path through a file, a symlink loop): a damaged or wrong path, never a failing storage.
 */
function unusablePathCode(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
  return code !== undefined && ['ENAMETOOLONG', 'EISDIR', 'ENOTDIR', 'ELOOP'].includes(code) ? code : undefined;
}

/**
 * When a relative restore path repeats the end of the storage root (`ck/job-a/chk-9` for a storage in `./ck`, as
 * it is written relative to the working directory), the path relative to the root it probably means.
 */
function rootRelativeHint(storage: CheckpointStorage, dir: string): string | undefined {
  const segments = dir.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (dir.startsWith('/') || segments.length < 2) return undefined;
  const root = storage.location.split(/[/\\]/).filter((segment) => segment !== '');
  for (let k = Math.min(root.length, segments.length - 1); k >= 1; k--) {
    if (root.slice(-k).join('/') === segments.slice(0, k).join('/')) return segments.slice(k).join('/');
  }
  return undefined;
}

export interface LoadOptions {
  /**
   * The key groups this thread restores of operator `uid` (undefined: all of them). A file of keyed state only, whose
   * key groups meet none of them, is skipped at load: a worker thread restores its own instances, and the main
   * thread has checked the whole checkpoint already. A file with operator state is read all the same (every
   * instance restores from every instance's operator state, timers included).
   */
  keyGroups?(uid: string): readonly KeyGroupRange[] | undefined;
}

/**
 * Reads and checks the checkpoint in directory `dir`, which must belong to job `job`. `dir` is relative to the
 * storage's root, or absolute (on a file system storage, as `CheckpointStats.path` is); never relative to the
 * working directory.
 */
export async function loadCheckpoint(storage: CheckpointStorage, dir: string, job: string, options: LoadOptions = {}): Promise<LoadedCheckpoint> {
  const where = (file: string) => (storage.describe ? storage.describe(`${dir}/${file}`) : `${storage.location}: ${dir}/${file}`);
  const metadataBytes = await storage.read(`${dir}/${METADATA_FILE}`).catch((error: unknown) => {
    const code = unusablePathCode(error);
    if (error instanceof CheckpointNotFoundError || (code !== undefined && code !== 'EISDIR')) {
      const hint = rootRelativeHint(storage, dir);
      throw new CheckpointNotFoundError(
        `no checkpoint at ${where(METADATA_FILE)}${code ? ` (${code})` : ''}: a checkpoint is a chk-<id> directory with a _metadata file (one without is ` +
          `incomplete), and a restore path is relative to the checkpoint storage's root (${storage.location}) or absolute, not relative to ` +
          `the working directory; ${hint ? `did you mean '${hint}'? ` : ''}pass 'latest' or the path of a chk-<id> directory (CheckpointStats.path)`,
        { cause: error },
      );
    }
    if (code !== undefined) throw new CheckpointCorruptedError(`${where(METADATA_FILE)}: cannot be read as a file (${code}); restore from another checkpoint`, { cause: error });
    throw error;
  });
  const metadata = checkMetadata(decodeFile('metadata', metadataBytes, where(METADATA_FILE)), where(METADATA_FILE));
  if (metadata.job !== job) {
    throw new ForeignCheckpointError(
      `${where(METADATA_FILE)} belongs to job '${metadata.job}', not '${job}'; restore it with a job named '${metadata.job}' or pick this job's checkpoint`,
    );
  }
  const readPayload = (uid: string, entry: StateFileEntry, checked?: CheckedPayload) => readStateFile(storage, dir, metadata.id, uid, entry, checked);
  let kept = 0;
  const states = new Map<string, RestoredOperator>();
  for (const operator of metadata.operators) {
    const { uid, files } = operator;
    const ranges = options.keyGroups?.(uid);
    // Every file is read and checked now, so that a damaged checkpoint is found before restoring (and `latest` can
    // fall back); big keyed payloads are not kept but read again when restored.
    const keyed: (KeyedStatePayload | undefined)[] = [];
    // Of the files not kept: what their check found, so that reading one again does not scan it again.
    const checked: (CheckedPayload | undefined)[] = [];
    const operators: (Json | undefined)[] = [];
    const withOperatorState = new Set<number>();
    for (const entry of files) {
      // A shared file's operator state is an earlier checkpoint's: this one's own files carry the current one, in the
      // first own file of each subtask (a task's chunks after the first carry none, see `writeChunks`), or a file
      // without key groups. Only those have to be parsed now, past the budget.
      const ownOperatorState = entry.checkpoint === undefined && (entry.keyGroups === null || !withOperatorState.has(entry.subtask));
      if (ownOperatorState) withOperatorState.add(entry.subtask);
      const groups = entry.keyGroups;
      if (ranges && groups !== null && !ownOperatorState && !meets(groups, ranges)) {
        // Not restored here: read (and checked) only if `keyed` is ever asked for its key groups.
        operators.push(undefined);
        keyed.push(undefined);
        continue;
      }
      if (kept > KEEP_LOADED_BYTES && !ownOperatorState) {
        checked[keyed.length] = await checkStateFileBytes(storage, dir, metadata.id, entry);
        operators.push(undefined);
        keyed.push(undefined);
        continue;
      }
      const { payload, bytes } = await readPayload(uid, entry);
      operators.push(entry.checkpoint === undefined ? payload.operator : undefined);
      const keep = payload.keyed !== undefined && (kept += bytes) <= KEEP_LOADED_BYTES;
      keyed.push(keep ? payload.keyed : undefined);
    }
    states.set(uid, {
      operators,
      hasKeyed: files.some((entry) => entry.keyGroups !== null),
      async *keyed(wanted) {
        for (const index of restoreOrder(files, metadata.id)) {
          const entry = files[index]!;
          const groups = entry.keyGroups;
          if (groups === null || (wanted && !meets(groups, wanted))) continue;
          const payload = keyed[index] ?? (await readPayload(uid, entry, checked[index])).payload.keyed;
          if (payload) yield payload;
        }
      },
    });
  }
  return { path: dir, storage, metadata, states };
}

/** Whether a file's key groups (first and last) meet one of `ranges`. */
function meets(groups: readonly [number, number], ranges: readonly KeyGroupRange[]): boolean {
  return ranges.some((range) => groups[1] >= range.start && groups[0] <= range.end);
}

/**
 * Reads and checks one state file of operator `uid` listed in the metadata of checkpoint `id` in directory `dir`
 * (a shared one where it is, see `stateFilePath`), with its size; `checked` is what checking it before found.
 */
export async function readStateFile(
  storage: CheckpointStorage,
  dir: string,
  id: number,
  uid: string,
  entry: StateFileEntry,
  checked?: CheckedPayload,
): Promise<{ payload: OperatorStatePayload; bytes: number }> {
  const { data, values, name } = await readStateFileBytes(storage, dir, id, entry);
  return { payload: checkStatePayload(decodeFile('state', data, name, values, checked), uid, name), bytes: data.length };
}

/** Reads one state file as `readStateFile` does and checks it whole (`checkFile`) without parsing its payload. */
async function checkStateFileBytes(storage: CheckpointStorage, dir: string, id: number, entry: StateFileEntry): Promise<CheckedPayload> {
  const { data, values, name } = await readStateFileBytes(storage, dir, id, entry);
  return checkFile('state', data, name, values).checked;
}

/** The bytes of one state file, the values stored beside them, and its name for errors. */
async function readStateFileBytes(
  storage: CheckpointStorage,
  dir: string,
  id: number,
  entry: StateFileEntry,
): Promise<{ data: Uint8Array; values: readonly unknown[]; name: string }> {
  const path = stateFilePath(dir, entry);
  const name = storage.describe ? storage.describe(path) : `${storage.location}: ${path}`;
  const { data, values } = await readStored(storage, path).catch((error: unknown) => {
    const code = unusablePathCode(error);
    // `_metadata` names a file no file system can hold there: the metadata is damaged, so `latest` falls back.
    if (code !== undefined) throw new CheckpointCorruptedError(`${name}: listed by checkpoint ${id}'s _metadata, cannot be read as a file (${code}); restore from another checkpoint`, { cause: error });
    if (!(error instanceof CheckpointNotFoundError) || entry.checkpoint === undefined) throw error;
    throw new CheckpointCorruptedError(
      `${name}: shared state file of checkpoint ${entry.checkpoint}, referenced by checkpoint ${id}, is missing; restore from another checkpoint`,
      { cause: error },
    );
  });
  return { data, values, name };
}

/**
 * The newest checkpoint of `job` that reads back whole. A damaged one is reported through `warn` and skipped, as
 * Flink falls back to an older completed checkpoint; undefined when there is none.
 */
export async function loadLatestCheckpoint(
  storage: CheckpointStorage,
  job: string,
  warn: (message: string) => void,
): Promise<LoadedCheckpoint | undefined> {
  const ids = await completedCheckpointIds(storage, job);
  for (const [index, id] of ids.entries()) {
    try {
      return await loadCheckpoint(storage, checkpointDir(job, id), job);
    } catch (error) {
      if (!(error instanceof CheckpointCorruptedError || error instanceof CheckpointNotFoundError)) throw error;
      const older = ids[index + 1];
      const next =
        older !== undefined
          ? `falling back to checkpoint ${older}`
          : `no older checkpoint is left: none of the job's complete checkpoints (${ids.map((n) => `chk-${n}`).join(', ')}) can be restored, so the job ` +
            'starts fresh, without their state (stop it and repair or restore a savepoint if that state matters)';
      warn(`checkpoint ${id} of job '${job}' cannot be restored (${(error).message}); ${next}`);
    }
  }
  return undefined;
}

/** Ids of the `chk-<id>` directories of a job that have `_metadata`, newest first. */
export async function completedCheckpointIds(storage: CheckpointStorage, job: string): Promise<number[]> {
  const ids = (await storage.list(job)).map(checkpointIdOf).filter((id): id is number => id !== undefined);
  const complete: number[] = [];
  for (const id of ids.sort((a, b) => b - a)) {
    if ((await storage.list(checkpointDir(job, id))).includes(METADATA_FILE)) complete.push(id);
  }
  return complete;
}

/** Checks that a decoded `_metadata` payload has the fields weir relies on; `name` goes into the error. */
export function checkMetadata(value: unknown, name: string): CheckpointMetadata {
  const metadata = value as CheckpointMetadata;
  const valid =
    metadata !== null &&
    typeof metadata === 'object' &&
    typeof metadata.job === 'string' &&
    typeof metadata.id === 'number' &&
    Array.isArray(metadata.operators) &&
    typeof metadata.maxParallelism === 'number' &&
    metadata.operators.every((operator) => typeof operator?.uid === 'string' && Array.isArray(operator.files));
  if (!valid) throw new CheckpointCorruptedError(`${name}: metadata does not have the expected fields; the file is damaged or foreign`);
  for (const { uid, files } of metadata.operators) {
    for (const entry of files) {
      const problem = stateFileEntryProblem(entry);
      if (problem !== undefined) {
        throw new CheckpointCorruptedError(
          `${name}: operator '${uid.slice(0, 200)}' lists ${problem}; the metadata is damaged or foreign — restore from another checkpoint`,
        );
      }
    }
  }
  return metadata;
}
