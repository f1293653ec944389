import type { CheckpointStats } from '../checkpoint/checkpointStats.js';
import { loadCheckpoint, type LoadedCheckpoint } from '../checkpoint/loadCheckpoint.js';
import { checkpointDir } from '../storage/layout.js';
import type { CheckpointStorage } from '../core/types.js';
import { SnapshotMismatchError } from './harnessErrors.js';

/**
 * A completed checkpoint of a harness, as bytes: the very files the checkpoint coordinator wrote (`_metadata` and one
 * state file per operator instance, in weir's file format with checksums). Restoring it decodes those bytes, so a
 * test exercises the same path as a job restoring from a checkpoint.
 */
export interface HarnessSnapshot {
  readonly id: number;
  /** Processing time at which the checkpoint started; a harness restored from it starts its clock there. */
  readonly timestamp: number;
  /** The checkpoint's files by name. */
  readonly files: ReadonlyMap<string, Uint8Array>;
  /** Durations, sizes and per-operator alignment stats (`heldRecords`) of the checkpoint. */
  readonly stats: CheckpointStats;
}

/** Reads every file of checkpoint `id` of `job` out of `storage`. */
export async function readSnapshot(storage: CheckpointStorage, job: string, stats: CheckpointStats): Promise<HarnessSnapshot> {
  const dir = checkpointDir(job, stats.id);
  const files = new Map<string, Uint8Array>();
  for (const name of await storage.list(dir)) files.set(name, await storage.read(`${dir}/${name}`));
  return { id: stats.id, timestamp: stats.timestamp, files, stats };
}

/** Writes a snapshot's files into `storage` as checkpoint `id` of `job`, and loads it back, checksums checked. */
export async function writeAndLoadSnapshot(storage: CheckpointStorage, job: string, snapshot: HarnessSnapshot): Promise<LoadedCheckpoint> {
  const dir = checkpointDir(job, snapshot.id);
  for (const [name, bytes] of snapshot.files) await storage.write(`${dir}/${name}`, bytes);
  return loadCheckpoint(storage, dir, job);
}

/**
 * Rejects with `SnapshotMismatchError` a snapshot that does not fit the harness: another `maxParallelism`, or state
 * of operators the fragment lacks (unless `allowNonRestoredState`). `internal` uids are the harness's own, never
 * suggested to the user.
 */
export function checkSnapshotFits(
  snapshot: LoadedCheckpoint,
  harness: { maxParallelism: number; stateful: readonly string[]; internal: readonly string[] },
  allowNonRestoredState: boolean,
): void {
  const { path } = snapshot;
  const { maxParallelism } = snapshot.metadata;
  if (maxParallelism !== harness.maxParallelism) {
    throw new SnapshotMismatchError(
      `snapshot ${path} was taken with maxParallelism ${maxParallelism}, this harness has ${harness.maxParallelism}; pass maxParallelism: ${maxParallelism}`,
    );
  }
  const uids = Array.from(snapshot.states.keys());
  const missing = uids.filter((uid) => !harness.stateful.includes(uid));
  if (missing.length > 0 && !allowNonRestoredState) {
    const fresh = harness.stateful.filter((uid) => !uids.includes(uid) && !harness.internal.includes(uid));
    throw new SnapshotMismatchError(
      `snapshot ${path} holds state of operators the fragment does not have: ${missing.map((u) => `'${u}'`).join(', ')}` +
        (fresh.length > 0 ? `; the fragment has instead: ${fresh.map((u) => `'${u}'`).join(', ')}` : '') +
        '; give the operators their uids back, or pass allowNonRestoredState: true to drop that state',
    );
  }
}
