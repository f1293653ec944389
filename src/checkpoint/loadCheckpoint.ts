import { CheckpointCorruptedError, CheckpointNotFoundError, ForeignCheckpointError } from '../core/errors';
import type { CheckpointStorage } from '../core/types';
import { decodeFile } from './fileFormat';
import { METADATA_FILE, checkpointDir, checkpointIdOf, type CheckpointMetadata, type OperatorStatePayload } from './layout';

/** A checkpoint read back and fully checked: every file present, every checksum right. */
export interface LoadedCheckpoint {
  path: string;
  metadata: CheckpointMetadata;
  /** Every state file's payload, by operator uid. */
  states: Map<string, OperatorStatePayload[]>;
}

/** Reads and checks the checkpoint in directory `dir`, which must belong to job `job`. */
export async function loadCheckpoint(storage: CheckpointStorage, dir: string, job: string): Promise<LoadedCheckpoint> {
  const where = (file: string) => (storage.describe ? storage.describe(`${dir}/${file}`) : `${storage.location}: ${dir}/${file}`);
  const metadataBytes = await storage.read(`${dir}/${METADATA_FILE}`).catch((error: unknown) => {
    if (error instanceof CheckpointNotFoundError) {
      throw new CheckpointNotFoundError(
        `no checkpoint at ${where(METADATA_FILE)} (a directory without _metadata is an incomplete checkpoint); pass 'latest' or the path of a chk-<id> directory`,
        { cause: error },
      );
    }
    throw error;
  });
  const metadata = checkMetadata(decodeFile('metadata', metadataBytes, where(METADATA_FILE)), where(METADATA_FILE));
  if (metadata.job !== job) {
    throw new ForeignCheckpointError(
      `${where(METADATA_FILE)} belongs to job '${metadata.job}', not '${job}'; restore it with a job named '${metadata.job}' or pick this job's checkpoint`,
    );
  }
  const states = new Map<string, OperatorStatePayload[]>();
  for (const operator of metadata.operators) {
    const payloads: OperatorStatePayload[] = [];
    for (const entry of operator.files) {
      const bytes = await storage.read(`${dir}/${entry.file}`);
      const payload = decodeFile('state', bytes, where(entry.file)) as OperatorStatePayload;
      if (payload === null || typeof payload !== 'object' || payload.uid !== operator.uid) {
        throw new CheckpointCorruptedError(`${where(entry.file)}: holds state of '${String(payload?.uid)}', expected '${operator.uid}'`);
      }
      payloads.push(payload);
    }
    states.set(operator.uid, payloads);
  }
  return { path: dir, metadata, states };
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
  for (const id of await completedCheckpointIds(storage, job)) {
    try {
      return await loadCheckpoint(storage, checkpointDir(job, id), job);
    } catch (error) {
      if (!(error instanceof CheckpointCorruptedError || error instanceof CheckpointNotFoundError)) throw error;
      warn(`checkpoint ${id} of job '${job}' cannot be restored (${(error as Error).message}); falling back to an older checkpoint`);
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
    metadata.operators.every((operator) => typeof operator?.uid === 'string' && Array.isArray(operator.files) && operator.files.every((f) => typeof f?.file === 'string'));
  if (!valid) throw new CheckpointCorruptedError(`${name}: metadata does not have the expected fields; the file is damaged or foreign`);
  return metadata;
}
