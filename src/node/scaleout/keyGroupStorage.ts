import type { CheckpointStorage } from '../../core/types.js';
import { METADATA_FILE } from '../../storage/layout.js';

export interface KeyGroupStorageOptions {
  /** The storage every member shares. */
  shared: CheckpointStorage;
  /** The directory of the shared storage this task's checkpoints go in: one per key group and owner epoch. */
  dir: string;
  /** The task's job name, whose `chk-<n>` directories are committed. */
  job: string;
  /** Commits a completed checkpoint (its path in the shared storage); rejects when the commit is refused. */
  commit: (checkpoint: string) => Promise<void>;
}

/**
 * The checkpoint storage one scale-out task writes through: the shared storage under a directory of its own (its key
 * group and its owner's fencing token), so that a fenced former owner and the new one never write the same files;
 * and the write of a checkpoint's `_metadata`, which completes it, also commits it (the fenced compare-and-set on the
 * key group's commit record). A refused commit fails that write, so the checkpoint does not complete and its sinks
 * do not publish what it covers: only committed checkpoints ever count.
 */
export function keyGroupStorage({ shared, dir, job, commit }: KeyGroupStorageOptions): CheckpointStorage {
  const under = (path: string) => `${dir}/${path.replace(/^\/+/, '')}`;
  const completes = new RegExp(`^/*${job.replace(/[.]/g, '\\.')}/chk-\\d+/${METADATA_FILE}$`);
  return {
    location: `${shared.location}: ${dir}`,
    maxStateSize: shared.maxStateSize,
    ...(shared.releasesWrittenData === true ? { releasesWrittenData: true } : {}),
    async write(path, data) {
      await shared.write(under(path), data);
      if (completes.test(path)) await commit(under(path.slice(0, -METADATA_FILE.length - 1)));
    },
    read: (path) => shared.read(under(path)),
    list: (path) => shared.list(under(path)),
    remove: (path) => shared.remove(under(path)),
    describe: (path) => (shared.describe ? shared.describe(under(path)) : `${shared.location}: ${under(path)}`),
  };
}

export interface SavepointCommitStorageOptions {
  /** The storage every member shares: savepoints go to its directory the request names. */
  shared: CheckpointStorage;
  /** Commits a completed savepoint (its directory); rejects when the commit is refused. */
  commit: (savepoint: string) => Promise<void>;
}

/**
 * The storage a scale-out task takes a group savepoint through: the shared storage, with the write of the savepoint's
 * `_metadata` also committing it as the key group's pointer (the same fenced compare-and-set as a checkpoint). So a
 * fenced former owner's savepoint never completes, and its sinks never publish what it covers; and a group stopped
 * with a savepoint resumes from exactly that savepoint if it is started again.
 */
export function savepointCommitStorage({ shared, commit }: SavepointCommitStorageOptions): CheckpointStorage {
  return {
    location: shared.location,
    maxStateSize: shared.maxStateSize,
    ...(shared.releasesWrittenData === true ? { releasesWrittenData: true } : {}),
    async write(path, data) {
      await shared.write(path, data);
      if (path.endsWith(`/${METADATA_FILE}`)) await commit(path.slice(0, -METADATA_FILE.length - 1));
    },
    read: (path) => shared.read(path),
    list: (path) => shared.list(path),
    remove: (path) => shared.remove(path),
    ...(shared.describe ? { describe: (path: string) => shared.describe!(path) } : {}),
  };
}
