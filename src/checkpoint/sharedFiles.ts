import type { CheckpointStorage } from '../core/types.js';
import { decodeFile } from '../storage/fileFormat.js';
import { METADATA_FILE, checkpointDir, type CheckpointMetadata } from '../storage/layout.js';
import { checkMetadata } from './loadCheckpoint.js';

/**
 * Incremental checkpoints reference the state files of earlier checkpoints in place (`<job>/chk-<id>/<file>`, an
 * entry's `checkpoint` field in `_metadata`) instead of copying them to a shared area: a file is shared by the
 * checkpoint that wrote it and every later one of its chain. These helpers count those references, so that
 * retention deletes a file only once no retained checkpoint uses it.
 */

/** `chk-<id>/<file>` of every file a checkpoint's metadata references in an earlier checkpoint's directory. */
export function sharedFilesOf(metadata: Pick<CheckpointMetadata, 'operators'>): string[] {
  return metadata.operators.flatMap((operator) => operator.files.flatMap((entry) => (entry.checkpoint === undefined ? [] : [`chk-${entry.checkpoint}/${entry.file}`])));
}

/** The shared files a complete checkpoint in storage references; none when its metadata cannot be read. */
export async function readSharedFiles(storage: CheckpointStorage, job: string, id: number): Promise<string[]> {
  const path = `${checkpointDir(job, id)}/${METADATA_FILE}`;
  try {
    return sharedFilesOf(checkMetadata(decodeFile('metadata', await storage.read(path), path), path));
  } catch {
    return [];
  }
}

/**
 * Removes the checkpoint directories `ids` that are no longer checkpoints (retired by retention, or never
 * completed), except the files in them that `needed` lists: such a directory loses its `_metadata` (it is no longer
 * a checkpoint to restore) and every other file, and goes once nothing in it is needed.
 */
export async function removeCheckpointDirs(storage: CheckpointStorage, job: string, ids: readonly number[], needed: ReadonlySet<string>): Promise<void> {
  await Promise.all(
    ids.map(async (id) => {
      const dir = checkpointDir(job, id);
      const prefix = `chk-${id}/`;
      if (!Array.from(needed).some((path) => path.startsWith(prefix))) return storage.remove(dir);
      // _metadata first: from then on the directory is not a checkpoint, whatever happens to the rest.
      const names = (await storage.list(dir)).sort((a, b) => Number(b === METADATA_FILE) - Number(a === METADATA_FILE));
      for (const name of names) if (!needed.has(`${prefix}${name}`)) await storage.remove(`${dir}/${name}`);
    }),
  );
}
