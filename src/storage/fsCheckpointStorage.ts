import { readFile, readdir, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CheckpointNotFoundError, errorCode } from '../core/errors.js';
import type { CheckpointStorage } from '../core/types.js';
import { acquireFsLock, type FsLockOptions } from './fsLock.js';
import { isTempFile, storageError, writeFileAtomic } from './fsInternals.js';

export interface FsCheckpointStorageOptions {
  /**
   * The lock that keeps two running jobs of one name off the directory (`<job>/.lock`; see `CheckpointStorage.lock`):
   * its staleness and heartbeat periods, or `false` to go without it. On by default.
   */
  lock?: FsLockOptions | false;
}

/**
 * Checkpoint storage in a directory of the local file system (Flink's FileSystemCheckpointStorage). Paths are
 * `/`-separated and relative to `dir`; an absolute path is used as it is. Every write is atomic and durable
 * (temp file, fsync, rename, fsync of the directory), so a crash at any point leaves either the old or the new file.
 * A running job holds `<job>/.lock`: a second job of the same name on the same directory fails to start with
 * `CheckpointDirectoryLockedError`, while a lock left by a dead process is taken over.
 * @example createJob({ name: 'clicks', checkpoints: { storage: fsCheckpointStorage('./checkpoints'), interval: 1_000 } })
 */
export function fsCheckpointStorage(dir: string, options: FsCheckpointStorageOptions = {}): CheckpointStorage {
  const root = resolve(dir);
  const absolute = (path: string) => resolve(root, path);
  const who = `checkpoint storage ${root}`;
  /** A full disk or a refused write named as such, with the file, instead of a bare errno. */
  const typed = (doing: string) => async (error: unknown): Promise<never> => {
    throw await storageError(error, who, doing);
  };

  return {
    location: root,
    releasesWrittenData: true,
    async write(path, data) {
      await writeFileAtomic(absolute(path), data).catch(typed('write'));
    },
    async read(path) {
      const file = absolute(path);
      try {
        const bytes = await readFile(file);
        // A plain Uint8Array, not a Buffer view into Node's shared pool.
        return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      } catch (error) {
        if (errorCode(error) === 'ENOENT') throw new CheckpointNotFoundError(`checkpoint file ${file} does not exist`, { cause: error });
        throw await storageError(error, who, 'read');
      }
    },
    async list(path) {
      try {
        const names = await readdir(absolute(path));
        return names.filter((name) => !isTempFile(name)).sort();
      } catch (error) {
        const code = errorCode(error);
        if (code === 'ENOENT' || code === 'ENOTDIR') return [];
        throw await storageError(error, who, 'read');
      }
    },
    async remove(path) {
      await rm(absolute(path), { recursive: true, force: true }).catch(typed('remove'));
    },
    describe: absolute,
    ...(options.lock === false
      ? {}
      : { lock: (job: string) => acquireFsLock(absolute(`${job}/.lock`), job, options.lock || {}).catch(typed('write the lock')) }),
  };
}
