import type { CheckpointStorage } from '../core/types.js';
import { checkpointIdOf, type CheckpointMetadata } from '../storage/layout.js';
import { readSharedFiles, removeCheckpointDirs, sharedFilesOf } from './sharedFiles.js';

/**
 * The complete checkpoints of a job in its storage (Flink's CompletedCheckpointStore with its SharedStateRegistry):
 * recovered at start, earlier runs' included, it keeps the newest `retain` and removes the rest, but for the shared
 * files a retained incremental checkpoint still references.
 */
export class CompletedCheckpointStore {
  /**
   * Ids of the complete checkpoints in storage, oldest first, earlier runs' included: as Flink recovers its completed
   * checkpoint store, a restarted job keeps `retain` checkpoints in all, not `retain` of its own next to stale ones.
   */
  private retained: number[] = [];
  /** `chk-<id>/<file>` shared files each retained checkpoint references, by checkpoint id. */
  private readonly references = new Map<number, string[]>();
  /** Removal of the checkpoints the latest completed one subsumed, running behind it (one removal at a time). */
  private retiring: Promise<void> = Promise.resolve();

  constructor(private readonly options: { storage: CheckpointStorage; job: string; retain: number }) {}

  /**
   * Counts the complete checkpoints (and the shared files they reference) for retention, and removes the directories
   * that never got their `_metadata` (left by a crash, they can never be restored) but for the shared files complete
   * checkpoints reference. Returns the highest checkpoint id in storage (0 for none): ids continue after it.
   */
  async recover(completeIds: readonly number[]): Promise<number> {
    const { storage, job } = this.options;
    const ids = (await storage.list(job)).map(checkpointIdOf).filter((id): id is number => id !== undefined);
    this.retained = [...completeIds].sort((a, b) => a - b);
    for (const id of this.retained) this.references.set(id, await readSharedFiles(storage, job, id));
    await removeCheckpointDirs(storage, job, ids.filter((id) => !completeIds.includes(id)), this.neededFiles());
    return Math.max(0, ...ids);
  }

  /** Checkpoint `id` completed with `metadata`: it is retained, with the shared files it references. */
  add(id: number, metadata: Pick<CheckpointMetadata, 'operators'>): void {
    this.retained.push(id);
    this.references.set(id, sharedFilesOf(metadata));
  }

  /**
   * Removes, behind the removals before it, the checkpoints beyond the newest `retain`. A removal that fails leaves
   * the directories in place, and the next one, which removes every id below the oldest retained, retries them.
   * `nextId` is the id the next checkpoint gets, read when the removal runs.
   */
  retire(nextId: () => number): void {
    this.retiring = this.retiring.then(() => this.applyRetention(nextId())).catch(() => undefined);
  }

  /** Resolves once the removals asked for so far are done. */
  settled(): Promise<void> {
    return this.retiring;
  }

  /** Deletes every checkpoint of the job: `retainOnCancel: false`. */
  async deleteAll(): Promise<void> {
    const { storage, job } = this.options;
    await storage.remove(job);
  }

  /** Keeps the newest `retain` completed checkpoints; older directories go, complete or not. */
  private async applyRetention(nextId: number): Promise<void> {
    const { storage, job, retain } = this.options;
    for (const id of this.retained.slice(0, -retain)) this.references.delete(id);
    this.retained = this.retained.slice(-retain);
    const oldestKept = this.retained[0] ?? nextId;
    const ids = (await storage.list(job)).map(checkpointIdOf).filter((id): id is number => id !== undefined && id < oldestKept);
    // Files a retained incremental checkpoint still references stay (their directory stops being a checkpoint).
    await removeCheckpointDirs(storage, job, ids, this.neededFiles());
  }

  /** The shared files the retained checkpoints reference: reference counting over `references`. */
  private neededFiles(): Set<string> {
    return new Set(this.retained.flatMap((id) => this.references.get(id) ?? []));
  }
}
