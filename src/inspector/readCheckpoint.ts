import { checkStatePayload } from '../checkpoint/checkPayloads.js';
import { decodeFile } from '../storage/fileFormat.js';
import { readStored } from '../storage/readStored.js';
import { checkMetadata } from '../checkpoint/loadCheckpoint.js';
import { readFailureHistory, type FailedCheckpoint } from '../checkpoint/failureHistory.js';
import {
  FAILURE_HISTORY_FILE,
  METADATA_FILE,
  checkpointIdOf,
  isIncremental,
  restoreOrder,
  savepointOf,
  stateFilePath,
  type CheckpointMetadata,
  type OperatorRole,
} from '../storage/layout.js';
import type { CheckpointStorage, KeyedStatePayload, StateKind, StateMeta } from '../core/types.js';
import { forEachPayloadEntry } from '../state/payloadEntries.js';
import { restoredPayload } from '../state/restoredPayload.js';

/**
 * Reads what checkpoints and savepoints hold without the job's code, on any `CheckpointStorage` (the same layout
 * everywhere): which jobs, checkpoints and savepoints there are, whether each is complete, and per operator and state
 * the key counts, sizes and key-group histogram. Backs `weir inspect` and the visual inspector. Damaged files never
 * throw: they are reported on the checkpoint with their error.
 */

/** `complete`: `_metadata` and every file it names read back whole; `incomplete`: no `_metadata` (never restorable). */
export type CheckpointStatus = 'complete' | 'incomplete' | 'corrupted';

/** Checkpoints are taken by the job and retained for `restore: 'latest'`; savepoints on request, kept until removed. */
export type CheckpointKind = CheckpointMetadata['kind'];

export interface StateSummary {
  readonly name: string;
  readonly kind: StateKind;
  readonly serializer: string;
  readonly serializerVersion: number;
  /** Whether values are saved with their last-access times (a state with a TTL). */
  readonly ttl: boolean;
  /** Distinct keys holding a value. */
  readonly keys: number;
  /** Key × namespace (window) entries. */
  readonly entries: number;
  /** Distinct namespaces besides the default one (windows). */
  readonly namespaces: number;
  /** UTF-8 bytes of the encoded keys and values. */
  readonly bytes: number;
  /** `[keyGroup, keys]` for every non-empty key group: skew shows here. */
  readonly keyGroups: [number, number][];
}

export interface OperatorSummary {
  readonly uid: string;
  readonly role: OperatorRole;
  readonly files: { file: string; bytes: number; keyGroups: [number, number] | null; error?: string }[];
  /** Bytes of the operator's files. */
  readonly bytes: number;
  /** UTF-8 bytes of its operator (non-keyed) state, e.g. a source offset; 0 without. */
  readonly operatorStateBytes: number;
  readonly states: StateSummary[];
}

/** A checkpoint or savepoint directory, known by its name before anything in it is read. */
export interface CheckpointRef {
  readonly kind: CheckpointKind;
  /** The job's name. */
  readonly job: string;
  readonly id: number;
  /** Its directory in the storage, e.g. `clicks/chk-3` or `savepoints/savepoint-clicks-4-1a2b3c4d`. */
  readonly path: string;
}

export interface CheckpointSummary extends CheckpointRef {
  readonly status: CheckpointStatus;
  /** Why it is corrupted (or incomplete). */
  readonly error?: string;
  /** When it was triggered (ms since the epoch on the job's clock); unknown without `_metadata`. */
  readonly timestamp?: number;
  readonly durationMs?: number;
  /** Bytes the checkpoint wrote, metadata included. */
  readonly persistedBytes?: number;
  /** Bytes of every file in its directory. */
  readonly fullBytes: number;
  readonly maxParallelism?: number;
  readonly operators: OperatorSummary[];
}

export interface JobSummary {
  /** The job's name. */
  readonly job: string;
  /** Its `chk-<id>` directories, oldest first. */
  readonly checkpoints: CheckpointSummary[];
  /** Its savepoints under the inspected root, by id. */
  readonly savepoints: CheckpointSummary[];
  /**
   * Its recent checkpoints that failed or were aborted, oldest first, with their reasons: they left no directory,
   * so they come from the job's `_failed_checkpoints` file. Empty when a single checkpoint or savepoint is inspected.
   */
  readonly failures: FailedCheckpoint[];
  /** Why the failure history could not be read (it is then ignored: nothing else depends on it). */
  readonly failuresError?: string;
}

/** Files read so far out of all files to read, for progress bars. */
export type ProgressListener = (progress: { done: number; total: number; file: string }) => void;

/**
 * What a directory is by its path: a checkpoint (`<job>/chk-<id>`) or a savepoint (`…/savepoint-<job>-<id>-<random>`,
 * wherever it was written); undefined for anything else.
 */
export function checkpointRefOf(path: string): CheckpointRef | undefined {
  const name = basename(path);
  const id = checkpointIdOf(name);
  if (id !== undefined) {
    const job = basename(dirname(path));
    return job === '' ? undefined : { kind: 'checkpoint', job, id, path };
  }
  const savepoint = savepointOf(name);
  return savepoint && { kind: 'savepoint', ...savepoint, path };
}

/**
 * The checkpoints and savepoints under `root`, by job and id: the `chk-<id>` directories of the jobs among its
 * children, and the savepoints among its children and theirs (the default `savepoints` directory, a job's
 * directory). Only names are listed; savepoints written deeper are found by inspecting their own directory.
 */
export async function findCheckpoints(storage: CheckpointStorage, root = ''): Promise<CheckpointRef[]> {
  const found: CheckpointRef[] = [];
  for (const name of await storage.list(root)) {
    const path = join(root, name);
    const ref = checkpointRefOf(path);
    if (ref) {
      found.push(ref);
      continue;
    }
    for (const child of await storage.list(path)) {
      const inner = checkpointRefOf(join(path, child));
      if (inner) found.push(inner);
    }
  }
  return found.sort((a, b) => compare(a.job, b.job) || a.id - b.id || compare(a.kind, b.kind) || compare(a.path, b.path));
}

/**
 * The names of the jobs with checkpoints or savepoints under `root` (see `findCheckpoints`), and, at the storage's
 * root, those with only a failure history (every checkpoint failed).
 */
export async function listJobs(storage: CheckpointStorage, root = ''): Promise<string[]> {
  const refs = await findCheckpoints(storage, root);
  return Array.from(new Set([...refs.map((ref) => ref.job), ...(root === '' ? await jobsWithFailureHistory(storage, refs) : [])]));
}

/**
 * Summaries of the checkpoints and savepoints under the storage's root, of the given jobs (every job by default) and
 * directories (every one by default), reading each file once.
 * @example const jobs = await inspectStorage(fsCheckpointStorage('./checkpoints'), { onProgress: ({ done, total }) => … });
 */
export async function inspectStorage(
  storage: CheckpointStorage,
  options: { jobs?: string[]; paths?: string[]; onProgress?: ProgressListener } = {},
): Promise<JobSummary[]> {
  const { jobs, paths } = options;
  const refs = (await findCheckpoints(storage)).filter((ref) => (!jobs || jobs.includes(ref.job)) && (!paths || paths.includes(ref.path)));
  const plan: { ref: CheckpointRef; files: string[] }[] = [];
  for (const ref of refs) plan.push({ ref, files: await storage.list(ref.path) });
  const total = plan.reduce((sum, { files }) => sum + files.length, 0);
  let done = 0;
  const onFile = (file: string) => options.onProgress?.({ done: ++done, total, file });
  const summaries = new Map<string, JobSummary & { failures: FailedCheckpoint[]; failuresError?: string }>();
  // A job whose checkpoints all failed has no chk-<id> directory left, only its failure history.
  const failedOnly = jobs || paths ? [] : await jobsWithFailureHistory(storage, refs);
  for (const job of jobs ?? [...refs.map((ref) => ref.job), ...failedOnly]) if (!summaries.has(job)) summaries.set(job, { job, checkpoints: [], savepoints: [], failures: [] });
  for (const { ref, files } of plan) {
    const summary = summaries.get(ref.job)!;
    (ref.kind === 'checkpoint' ? summary.checkpoints : summary.savepoints).push(await summarizeCheckpoint(storage, ref, { files, onFile }));
  }
  if (!paths) {
    for (const summary of summaries.values()) {
      try {
        summary.failures = await readFailureHistory(storage, summary.job);
      } catch (error) {
        summary.failuresError = (error as Error).message;
      }
    }
  }
  return Array.from(summaries.values());
}

/** The jobs under the root with a failure history but no checkpoint or savepoint among `refs`. */
async function jobsWithFailureHistory(storage: CheckpointStorage, refs: readonly CheckpointRef[]): Promise<string[]> {
  const known = new Set(refs.map((ref) => ref.job));
  const found: string[] = [];
  for (const name of await storage.list('')) {
    if (known.has(name) || checkpointRefOf(name)) continue;
    if ((await storage.list(name)).includes(FAILURE_HISTORY_FILE)) found.push(name);
  }
  return found;
}

/**
 * A job's checkpoints and savepoints in one list by id, a checkpoint before a savepoint of the same id: a run's
 * checkpoints and savepoints share their ids, so in this order they read as the run's history.
 */
export function checkpointHistory(job: JobSummary): CheckpointSummary[] {
  return [...job.checkpoints, ...job.savepoints].sort((a, b) => a.id - b.id || compare(a.kind, b.kind) || compare(a.path, b.path));
}

/**
 * Reads one checkpoint or savepoint directory (they share the layout) and summarises it; problems go into `status`
 * and `error`.
 * @example await summarizeCheckpoint(storage, checkpointRefOf('clicks/chk-3')!)
 */
export async function summarizeCheckpoint(
  storage: CheckpointStorage,
  ref: CheckpointRef,
  options: { files?: string[]; onFile?: (file: string) => void } = {},
): Promise<CheckpointSummary> {
  const { path: dir, kind, job, id } = ref;
  const where = (file: string) => (storage.describe ? storage.describe(`${dir}/${file}`) : `${dir}/${file}`);
  const files = options.files ?? (await storage.list(dir));
  const bytes = new Map<string, { data: Uint8Array; values: readonly unknown[] }>();
  const errors = new Map<string, string>();
  for (const file of files) {
    try {
      bytes.set(file, await readStored(storage, `${dir}/${file}`));
    } catch (error) {
      errors.set(file, `${where(file)}: ${(error as Error).message}`);
    }
    options.onFile?.(`${dir}/${file}`);
  }
  const fullBytes = Array.from(bytes.values()).reduce((sum, { data }) => sum + data.length, 0);
  const base = { kind, job, id, path: dir, fullBytes };
  const metadataBytes = bytes.get(METADATA_FILE)?.data;
  if (!files.includes(METADATA_FILE)) {
    return { ...base, status: 'incomplete', error: `${where(METADATA_FILE)} is missing: the ${kind} never completed`, operators: [] };
  }
  let metadata: CheckpointMetadata;
  try {
    if (!metadataBytes) throw new Error(errors.get(METADATA_FILE));
    metadata = checkMetadata(decodeFile('metadata', metadataBytes, where(METADATA_FILE)), where(METADATA_FILE));
  } catch (error) {
    return { ...base, status: 'corrupted', error: (error as Error).message, operators: [] };
  }
  const problems: string[] = [];
  // `restore: 'latest'` takes a job's chk-<id> directories for its checkpoints; a savepoint is restored by its path, so
  // its name may be anything.
  if (kind === 'checkpoint' && metadata.job !== job) problems.push(`${where(METADATA_FILE)} belongs to job '${metadata.job}', not '${job}'`);
  if (kind === 'checkpoint' && metadata.id !== id) problems.push(`${where(METADATA_FILE)} is checkpoint ${metadata.id}, not ${id}`);
  // Incremental checkpoints reference files in earlier checkpoints' directories of the job: read those where they are.
  for (const entry of metadata.operators.flatMap((operator) => operator.files)) {
    if (entry.checkpoint === undefined) continue;
    const path = stateFilePath(dir, entry);
    try {
      bytes.set(sharedName(entry), await readStored(storage, path));
    } catch (error) {
      errors.set(sharedName(entry), `${storage.describe ? storage.describe(path) : path}: ${(error as Error).message}`);
    }
  }
  const operators = metadata.operators.map((operator): OperatorSummary => {
    const { uid, files } = operator;
    const states = new Map<string, StateTally>();
    let operatorStateBytes = 0;
    const keyed: (KeyedStatePayload | undefined)[] = [];
    const operatorFiles = files.map((entry) => {
      const file = entry.checkpoint === undefined ? entry.file : sharedName(entry);
      const stored = bytes.get(file);
      const summary = { file, bytes: stored?.data.length ?? 0, keyGroups: entry.keyGroups };
      try {
        if (!stored) throw new Error(errors.get(file) ?? `${where(file)} is missing`);
        const payload = checkStatePayload(decodeFile('state', stored.data, where(file), stored.values), uid, where(file));
        // A shared file's operator state is an earlier checkpoint's: this one's own files carry the current one.
        if (entry.checkpoint === undefined && payload.operator !== undefined) operatorStateBytes += utf8Length(JSON.stringify(payload.operator));
        keyed.push(payload.keyed);
        return summary;
      } catch (error) {
        problems.push((error as Error).message);
        keyed.push(undefined);
        return { ...summary, error: (error as Error).message };
      }
    });
    const { maxParallelism } = metadata;
    try {
      // An incremental checkpoint's base and deltas are counted as a restore applies them, not added up.
      const inOrder = restoreOrder(files, metadata.id).flatMap((index) => keyed[index] ?? []);
      const payloads = isIncremental(files) ? [restoredPayload(inOrder, { uid, maxParallelism, range: { start: 0, end: maxParallelism - 1 } })] : inOrder;
      for (const payload of payloads) tally(payload, states, maxParallelism);
    } catch (error) {
      problems.push((error as Error).message);
    }
    return {
      uid,
      role: operator.role,
      files: operatorFiles,
      bytes: operatorFiles.reduce((sum, file) => sum + file.bytes, 0),
      operatorStateBytes,
      states: Array.from(states.values(), finish),
    };
  });
  return {
    ...base,
    status: problems.length === 0 ? 'complete' : 'corrupted',
    ...(problems.length === 0 ? {} : { error: problems.join('; ') }),
    timestamp: metadata.timestamp,
    durationMs: metadata.stats?.durationMs,
    persistedBytes: (metadata.stats?.bytes ?? 0) + (metadataBytes?.length ?? 0),
    maxParallelism: metadata.maxParallelism,
    operators,
  };
}

interface StateTally {
  meta: StateMeta;
  keys: Set<unknown>;
  entries: number;
  namespaces: Set<string>;
  bytes: number;
  keyGroups: Map<number, number>;
}

function tally(payload: KeyedStatePayload, states: Map<string, StateTally>, maxParallelism: number): void {
  const { states: metas } = payload;
  const tallies = metas.map((meta) => {
    let state = states.get(meta.name);
    if (state === undefined) {
      state = { meta, keys: new Set(), entries: 0, namespaces: new Set(), bytes: 0, keyGroups: new Map() };
      states.set(meta.name, state);
    }
    return state;
  });
  // Entries name declared states: `checkStatePayload` checked them.
  forEachPayloadEntry(payload, { maxParallelism, keyGroups: true }, ([index, key, value, namespace], keyGroup) => {
    const state = tallies[index]!;
    const encodedKey = typeof key === 'string' ? key : JSON.stringify(key);
    state.entries++;
    state.bytes += utf8Length(encodedKey) + utf8Length(JSON.stringify(value) ?? '');
    if (namespace !== undefined && namespace !== '') state.namespaces.add(namespace);
    if (!state.keys.has(encodedKey)) {
      state.keys.add(encodedKey);
      state.keyGroups.set(keyGroup, (state.keyGroups.get(keyGroup) ?? 0) + 1);
    }
  });
}

function finish({ meta, keys, entries, namespaces, bytes, keyGroups }: StateTally): StateSummary {
  return {
    name: meta.name,
    kind: meta.kind,
    serializer: meta.serializer,
    serializerVersion: meta.serializerVersion,
    ttl: meta.ttl === true,
    keys: keys.size,
    entries,
    namespaces: namespaces.size,
    bytes,
    keyGroups: Array.from(keyGroups).sort((a, b) => a[0] - b[0]),
  };
}

function utf8Length(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) length += code >= 0x800 && (code < 0xd800 || code > 0xdfff) ? 2 : 1;
  }
  return length;
}

function join(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function dirname(path: string): string {
  return path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** How a file shared from an earlier checkpoint (incremental) is named in a summary: relative to this checkpoint. */
function sharedName(entry: { file: string; checkpoint?: number }): string {
  return `../chk-${entry.checkpoint}/${entry.file}`;
}
