import { CheckpointNotFoundError, JobDefinitionError } from '../core/errors.js';
import type { CheckpointStorage } from '../core/types.js';
import { directoryPrefix, normalizePath as normalize } from './storagePaths.js';

/**
 * Checkpoint storage in a `Map` (Flink's JobManagerCheckpointStorage): for tests, the playground and jobs whose
 * state may be lost with the process. `maxStateSize` bounds one operator's snapshot, as Flink's 5 MB default does,
 * so a job that outgrows memory fails with a clear error instead of exhausting the heap; the engine enforces it.
 * @example createJob({ name: 'clicks', checkpoints: { storage: memoryCheckpointStorage({ maxStateSize: 1 << 20 }) } })
 */
export function memoryCheckpointStorage({ maxStateSize = 5 * 1024 * 1024 }: { maxStateSize?: number } = {}): CheckpointStorage {
  if (typeof maxStateSize !== 'number' || !(maxStateSize > 0)) {
    throw new JobDefinitionError(`memoryCheckpointStorage: maxStateSize must be a positive number of bytes, got ${String(maxStateSize)}`);
  }
  // Keys are normalized paths; there are no directory entries, a directory is any prefix ending at a `/`.
  const files = new Map<string, Uint8Array>();

  return {
    location: 'memory',
    maxStateSize,
    releasesWrittenData: true,
    async write(path, data) {
      // Copied so that a caller reusing its buffer cannot change a checkpoint after the fact.
      files.set(normalize(path), new Uint8Array(data));
    },
    async read(path) {
      const data = files.get(normalize(path));
      if (data === undefined) throw new CheckpointNotFoundError(`memory checkpoint storage: '${path}' does not exist`);
      return new Uint8Array(data);
    },
    async list(dir) {
      const prefix = directoryPrefix(dir);
      const children = new Set<string>();
      for (const path of files.keys()) {
        if (path.startsWith(prefix)) children.add(path.slice(prefix.length).split('/', 1)[0]!);
      }
      return [...children].sort();
    },
    async remove(path) {
      const file = normalize(path);
      const prefix = directoryPrefix(path);
      for (const key of [...files.keys()]) {
        if (key === file || key.startsWith(prefix)) files.delete(key);
      }
    },
  };
}
