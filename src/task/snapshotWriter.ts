import { StateSizeExceededError } from '../core/errors.js';
import type { AlignmentStats, SnapshotCapture } from '../core/graph.js';
import type { OperatorCheckpointStats } from '../core/operatorCheckpointStats.js';
import type { CheckpointStorage, KeyGroupRange, Scheduler } from '../core/types.js';
import { yieldToEventLoop } from '../core/yieldToEventLoop.js';
import { BufferPool } from '../storage/bufferPool.js';
import { encodeFile } from '../storage/fileFormat.js';
import { stateFileName, type OperatorStatePayload, type StateFileEntry } from '../storage/layout.js';
import { CHUNK_ENTRIES, IN_FLIGHT_BYTES, PIECE_ENTRIES, writeChunks, writeFlatChunks } from './keyedStateFiles.js';

/**
 * Where the task side writes one checkpoint's state, as the coordinator announces it when it triggers the checkpoint
 * (Flink's barrier carries the same as its checkpoint options). Plain data: it crosses to tasks in a worker.
 */
export interface SnapshotTarget {
  readonly id: number;
  /** The checkpoint's directory in its storage. */
  readonly dir: string;
  /** A savepoint stays self-contained: no values set aside beside its files. */
  readonly kind: 'checkpoint' | 'savepoint';
  /** Persist only the keyed state changed since the previous checkpoint (incremental). */
  readonly delta: boolean;
}

/** An acknowledging task: an operator instance. */
export interface SnapshotTask {
  readonly uid: string;
  readonly subtask: number;
}

/** What a task persisted for a checkpoint: its files, and whether its keyed state went in as a delta or in full. */
export interface TaskStateHandles {
  readonly files: readonly StateFileEntry[];
  /** Undefined for a task without keyed state. */
  readonly keyed: 'delta' | 'full' | undefined;
}

/**
 * What the task side reports to the coordinator (Flink's task-to-JobManager checkpoint messages). Every argument is
 * plain data, so the reports can be messages between a worker and the main thread.
 */
export interface CheckpointAcknowledger {
  /** `task` captured its state for checkpoint `id` at its barrier and is persisting it now. */
  persisting(id: number, task: SnapshotTask): void;
  /** `task` persisted its state for checkpoint `id`. */
  acknowledge(id: number, task: SnapshotTask, handles: TaskStateHandles, stats: OperatorCheckpointStats): void;
  /** Persisting `task`'s state for checkpoint `id` failed: the checkpoint fails. */
  failed(id: number, task: SnapshotTask, error: unknown): void;
}

export interface SnapshotWriterOptions {
  /** The job's clock: every duration in the stats is measured on it. */
  readonly clock: Pick<Scheduler, 'now'>;
  /** Where the reports go; none with checkpointing off. */
  readonly acknowledger: CheckpointAcknowledger | undefined;
}

/** A checkpoint the writer is told about, while it runs. */
interface Running {
  readonly target: SnapshotTarget;
  readonly storage: CheckpointStorage;
  /** Aborted or complete: writes in flight stop, and what they wrote after an abort is removed. */
  ended: boolean;
}

/**
 * The task side of checkpoints for one attempt (Flink's SubtaskCheckpointCoordinator): at a barrier, captures a
 * task's state synchronously and lets the barrier go on, then writes the state files off the processing path and
 * acknowledges them. It never reads the coordinator's state: the coordinator tells it where each checkpoint goes
 * (`begin`) and when it ends (`end`), and it reports back through `CheckpointAcknowledger`.
 */
export class SnapshotWriter {
  private readonly running = new Map<number, Running>();
  /** The state files' buffers, reused from one checkpoint to the next: about what one checkpoint has in flight. */
  private readonly buffers = new BufferPool(IN_FLIGHT_BYTES);

  constructor(private readonly options: SnapshotWriterOptions) {}

  /**
   * Checkpoint `target` started: its state files go into `storage` (the job's checkpoint storage, or a savepoint's
   * own). The storage is the one thing here that is not data: a worker would open its own instance of it.
   */
  begin(target: SnapshotTarget, storage: CheckpointStorage): void {
    this.running.set(target.id, { target, storage, ended: false });
  }

  /** Checkpoint `id` was aborted or completed: nothing more is written for it. */
  end(id: number): void {
    const running = this.running.get(id);
    if (running) running.ended = true;
    this.running.delete(id);
  }

  /**
   * A task's barrier for checkpoint `id`: captures its state (the pause a barrier causes), lets the barrier go on,
   * then persists the capture. `range` is the task's key groups.
   */
  snapshot(id: number, task: SnapshotTask & { range: KeyGroupRange }, capture: () => SnapshotCapture, forward: () => void, alignment?: AlignmentStats): void {
    const { clock } = this.options;
    const started = clock.now();
    const state = capture();
    const syncMs = clock.now() - started;
    forward();
    this.persist(id, { uid: task.uid, subtask: task.subtask, range: state.keyed ? task.range : undefined }, state, {
      syncMs,
      alignmentMs: alignment?.alignmentMs ?? 0,
      heldRecords: alignment?.heldRecords ?? 0,
    });
  }

  /**
   * Persists a task's capture off the processing path, then acknowledges it. The state is materialised on a later
   * macrotask, so the barrier has travelled on first, and keyed state is written in chunks of whole key groups (one
   * file each, yielding to the event loop between them), so neither the payload nor its encoding is ever whole in
   * memory. The keyed snapshot is released once persisted.
   */
  private persist(id: number, task: SnapshotTask & { range: KeyGroupRange | undefined }, state: SnapshotCapture, taskStats: Omit<OperatorCheckpointStats, 'uid' | 'subtask' | 'asyncMs' | 'bytes'>): void {
    const { clock, acknowledger } = this.options;
    const running = this.running.get(id);
    const release = () => state.keyed?.release();
    if (!running || !acknowledger) {
      release();
      return;
    }
    const { storage, target } = running;
    const { uid, subtask, range } = task;
    acknowledger.persisting(id, { uid, subtask });
    const startedAt = clock.now();
    const files: StateFileEntry[] = [];
    let total = 0;
    /** Writes one state file (`payload`, or a file already encoded); false when the checkpoint was aborted meanwhile. */
    const write = async (file: string, keyGroups: [number, number] | null, payload: OperatorStatePayload | Uint8Array, setAside: readonly unknown[] = []): Promise<boolean> => {
      const bytes = payload instanceof Uint8Array ? payload : encodeFile('state', payload, setAside.length);
      total += bytes.length;
      if (storage.maxStateSize !== undefined && total > storage.maxStateSize) {
        throw new StateSizeExceededError(
          `operator '${uid}': its snapshot for checkpoint ${id} is over ${total} bytes, past the ${storage.maxStateSize}-byte limit of ` +
            `${storage.location} checkpoint storage; use a file system storage or raise maxStateSize`,
        );
      }
      if (running.ended) return false;
      const path = `${target.dir}/${file}`;
      const length = bytes.length;
      if (setAside.length > 0) await storage.writeStructured!(path, bytes, setAside);
      // Nothing reads a state file's bytes once written: a storage in another thread may take them, and gives them back.
      else if (storage.writeTaking !== undefined) this.buffers.give(await storage.writeTaking(path, bytes));
      else await storage.write(path, bytes);
      files.push({ file, subtask, keyGroups, bytes: length });
      return !running.ended;
    };
    yieldToEventLoop()
      .then(async () => {
        if (running.ended) return;
        const operator = (await state.operator) ?? undefined;
        let written: boolean;
        let keyed: TaskStateHandles['keyed'];
        // A task with nothing to save (a stateless sink, a union without records in flight) writes no file: one fsync
        // less per checkpoint, and a restore finds no state for it, which is the same.
        if (state.keyed === undefined || range === undefined) written = operator === undefined ? true : await write(stateFileName(uid, subtask, undefined), null, { uid, operator });
        else {
          // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with `.call(state.keyed, …)`
          const changes = target.delta ? state.keyed.materializeChangeChunks : undefined;
          // Rich values go beside the file where the storage clones them, but never into a savepoint, which stays self-contained.
          const setAside = storage.writeStructured !== undefined && target.kind === 'checkpoint';
          if (changes === undefined && state.keyed.flatChunks === true) {
            // Rows where the backend has them: the builder of a file writes them, and every reader expands them.
            const pieces = state.keyed.materializeShapedChunks?.(PIECE_ENTRIES) ?? state.keyed.materializeChunks(PIECE_ENTRIES);
            written = await writeFlatChunks(pieces, { uid, subtask, range }, operator, CHUNK_ENTRIES, setAside, () => running.ended, write, state.keyed.entries, storage.releasesWrittenData === true ? this.buffers : undefined);
          } else {
            const chunks = (changes ?? state.keyed.materializeChunks).call(state.keyed, CHUNK_ENTRIES);
            written = await writeChunks(chunks, { uid, subtask, range }, operator, setAside, write);
          }
          // A backend without deltas wrote its full state: that operator starts a new chain in this checkpoint.
          keyed = changes ? 'delta' : 'full';
        }
        // Aborted (a timeout, say) while a write was in flight: the abort already removed the directory, and this
        // write brought it back; remove it again, or a partial checkpoint stays until the next restore's cleanup.
        if (!written) {
          await storage.remove(target.dir);
          return;
        }
        acknowledger.acknowledge(id, { uid, subtask }, { files, keyed }, { uid, subtask, ...taskStats, asyncMs: clock.now() - startedAt, bytes: total });
      })
      .catch((error: unknown) => acknowledger.failed(id, { uid, subtask }, error))
      .finally(release);
  }
}
