import { checkStatePayload } from '../checkpoint/checkPayloads.js';
import { decodeFile } from '../storage/fileFormat.js';
import { METADATA_FILE, isIncremental, restoreOrder, stateFilePath, type CheckpointMetadata } from '../storage/layout.js';
import { checkMetadata } from '../checkpoint/loadCheckpoint.js';
import type { CheckpointStorage, KeyedStatePayload } from '../core/types.js';
import { restoredPayload } from '../state/restoredPayload.js';
import { readStored } from '../storage/readStored.js';
import type { CheckpointRef, CheckpointSummary, OperatorSummary } from './checkpointSummary.js';
import { finish, tally, utf8Length, type StateTally } from './stateTally.js';

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

/** How a file shared from an earlier checkpoint (incremental) is named in a summary: relative to this checkpoint. */
function sharedName(entry: { file: string; checkpoint?: number }): string {
  return `../chk-${entry.checkpoint}/${entry.file}`;
}
