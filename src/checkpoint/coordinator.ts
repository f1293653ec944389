import { Subject, type Observable, type Subscription } from 'rxjs';
import { CheckpointBarrier } from '../core/elements.js';
import { CheckpointAbortedError, CheckpointFailuresExceededError, StateSizeExceededError } from '../core/errors.js';
import type { CheckpointStorage, Json, KeyGroupRange, KeyedSnapshot, KeyedStatePayload, Scheduler } from '../core/types.js';
import { yieldToEventLoop } from '../core/yieldToEventLoop.js';
import type { CheckpointStats, OperatorCheckpointStats } from './checkpointStats.js';
import { settingAside } from '../state/setAsideValues.js';
import { FlatStateFileBuilder, encodeFile } from './fileFormat.js';
import { FAILURE_HISTORY_LENGTH, failedCheckpointOf, readFailureHistory, writeFailureHistory, type FailedCheckpoint } from './failureHistory.js';
import { readSharedFiles, removeCheckpointDirs, sharedFilesOf } from './sharedFiles.js';
import {
  METADATA_FILE,
  checkpointDir,
  checkpointIdOf,
  savepointDir,
  stateFileName,
  type CheckpointMetadata,
  type OperatorRole,
  type OperatorStatePayload,
  type StateFileEntry,
} from './layout.js';

/** One acknowledging task: an operator instance. */
export interface CheckpointTask {
  readonly uid: string;
  readonly subtask: number;
  readonly role: OperatorRole;
}

/** What the coordinator needs from the running attempt of a job. */
export interface CheckpointParticipants {
  /** Every task that acknowledges a checkpoint, by `taskId(uid, subtask)`. */
  readonly tasks: ReadonlyMap<string, CheckpointTask>;
  /** Asks every source to put the barrier into its flow at its next chunk boundary. */
  injectBarrier(barrier: CheckpointBarrier): void;
  /** Asks every source to send a cancellation marker for an aborted checkpoint, to release aligning operators. */
  injectCancel(id: number): void;
  /** The checkpoint is complete: sinks commit. */
  notifyComplete(id: number): Promise<void>;
  /** Checkpoints failed more often in a row than tolerated: the attempt fails with the last cause. */
  fail(error: unknown): void;
}

export function taskId(uid: string, subtask: number): string {
  return `${uid}#${subtask}`;
}

export interface CoordinatorOptions {
  job: string;
  storage: CheckpointStorage;
  scheduler: Scheduler;
  maxParallelism: number;
  /** How many completed checkpoints to keep (Flink's `state.checkpoints.num-retained`). */
  retain: number;
  /** A checkpoint not complete after this many ms is aborted. */
  timeout: number;
  /** Least time between the end of one checkpoint and the start of the next periodic one. */
  minPause: number;
  /** Checkpoints in flight at once. */
  maxConcurrent: number;
  /** Consecutive failed checkpoints tolerated before the job fails. */
  tolerableFailures: number;
  /** Entries per keyed state file (see `KeyedSnapshot.materializeChunks`); 131 072 by default. */
  chunkEntries?: number;
  /**
   * Incremental checkpoints: persist only the keyed state changed since the previous checkpoint, referencing the
   * earlier files for the rest; every `fullEvery`-th checkpoint of a chain is full again.
   */
  incremental?: { fullEvery: number };
  /** Where warnings go (a failure history file that cannot be read or written). */
  warn?: (message: string) => void;
}

/** Entries per keyed state file: big state is written as several files of about this many entries. */
const CHUNK_ENTRIES = 131_072;

/**
 * Entries materialised and encoded in one macrotask, for a snapshot whose pieces can be joined into one file
 * (`KeyedSnapshot.flatChunks`): a few milliseconds of work, after which the job's records run again. Not fewer:
 * until the snapshot is done, a record reading a key not encoded yet pays for a private copy of its value
 * (copy-on-write), so the more source chunks run between pieces, the more copies; at 8 192 a 1M-key job runs four
 * times as many chunks inside each checkpoint (measured side by side on a loaded 2-core machine: throughput with
 * checkpoints on over off 0.35-0.54 at 8 192, 0.58-0.64 at 32 768). The price is a longer pause per piece.
 */
const SLICE_ENTRIES = 32_768;

/** What a task captured at a barrier: its keyed snapshot (released here once persisted) and its operator state. */
export interface TaskState {
  keyed?: KeyedSnapshot;
  operator?: Json | Promise<Json | undefined>;
}

/** What a task reports with its state, for the checkpoint's stats. */
export interface TaskSnapshotStats {
  syncMs: number;
  alignmentMs: number;
  heldRecords: number;
}

/** Where a savepoint goes: a directory in a storage (the job's checkpoint storage unless given). */
export interface SavepointTarget {
  storage: CheckpointStorage;
  dir: string;
}

interface PendingCheckpoint {
  readonly id: number;
  readonly dir: string;
  readonly storage: CheckpointStorage;
  readonly barrier: CheckpointBarrier;
  readonly startedAt: number;
  readonly participants: CheckpointParticipants;
  readonly waiting: Set<string>;
  /** Tasks that captured their state (their barrier arrived) but have not acknowledged yet: still persisting. */
  readonly persisting: Set<string>;
  readonly operators: Map<string, { role: OperatorRole; files: StateFileEntry[] }>;
  readonly stats: OperatorCheckpointStats[];
  readonly result: Promise<CheckpointStats>;
  resolve(stats: CheckpointStats): void;
  reject(error: unknown): void;
  aborted: boolean;
  timeout?: Subscription;
  /** Set while `_metadata` is being written: from then on the checkpoint may exist, so its files must stay. */
  committing?: Promise<void>;
  /** The chain this checkpoint builds on: set when it persists only what changed since (incremental). */
  readonly base: Chain | undefined;
  /** `chainEpoch` when triggered: a chain reset meanwhile means it must not become the chain's head. */
  readonly epoch: number;
  /** Operators whose tasks all wrote deltas: their files go on top of the chain's. */
  readonly deltaOperators: Set<string>;
}

/**
 * The last checkpoint of an incremental chain, as the next delta builds on it: its keyed files (each with the
 * checkpoint that holds it), its length in deltas, and the bytes of its base and of its deltas.
 */
interface Chain {
  readonly id: number;
  readonly files: Map<string, StateFileEntry[]>;
  readonly deltas: number;
  readonly baseBytes: number;
  readonly deltaBytes: number;
}

/**
 * Flink's CheckpointCoordinator for one job, across its attempts: triggers checkpoints (at most `maxConcurrent` in
 * flight, `minPause` apart), collects the tasks' acknowledgements, writes `_metadata` last (only then is a
 * checkpoint complete), tells sinks to commit, deletes checkpoints beyond the retained ones, aborts checkpoints
 * that time out, and fails the job after more consecutive failures than tolerated.
 */
export class CheckpointCoordinator {
  private nextId = 1;
  private readonly pending = new Map<number, PendingCheckpoint>();
  private participants: CheckpointParticipants | undefined;
  private readonly completed: CheckpointStats[] = [];
  /** Every checkpoint of this run as it ended (completed, failed or aborted), in that order. */
  private readonly ended: CheckpointStats[] = [];
  private readonly reports = new Subject<CheckpointStats>();
  /**
   * Ids of the complete checkpoints in storage, oldest first, earlier runs' included: as Flink recovers its completed
   * checkpoint store, a restarted job keeps `retain` checkpoints in all, not `retain` of its own next to stale ones.
   */
  private retained: number[] = [];
  /** A metadata write still in flight after its checkpoint was aborted; a restore waits for it. */
  private settling: Promise<void> = Promise.resolve();
  /** Removal of the checkpoints the latest completed one subsumed, running behind it (one removal at a time). */
  private retiring: Promise<void> = Promise.resolve();
  private consecutiveFailures = 0;
  /**
   * Where the next incremental checkpoint builds on; undefined when the next one must be full: at the start of an
   * attempt (its backends start tracking changes afresh), after a failed or aborted checkpoint or a savepoint (their
   * snapshots consumed changes that no retained checkpoint holds), and past `fullEvery`.
   */
  private chain: Chain | undefined;
  /** Counts chain resets. */
  private chainEpoch = 0;
  /** `chk-<id>/<file>` shared files each retained checkpoint references, by checkpoint id. */
  private readonly references = new Map<number, string[]>();
  private finalTriggered = false;
  /** The attempt's final checkpoint (not a stop-with-savepoint), once triggered: it answers later requests. */
  private finalCheckpoint: Promise<CheckpointStats> | undefined;
  private lastEndedAt = Number.NEGATIVE_INFINITY;
  /** The job's recorded failures (`failureHistory.ts`), read from its file before this run first adds one. */
  private failures: FailedCheckpoint[] | undefined;
  /** Writes of the failure history, one at a time. */
  private historyWrites: Promise<void> = Promise.resolve();
  private historyWarned = false;

  constructor(private readonly options: CoordinatorOptions) {}

  /** Every checkpoint completed by this run of the job, oldest first (deleted ones included). */
  get history(): readonly CheckpointStats[] {
    return this.completed;
  }

  /** Every checkpoint of this run as it ended, oldest first: completed, failed or aborted (with its reason). */
  get outcomes(): readonly CheckpointStats[] {
    return this.ended;
  }

  /** Every checkpoint as it ends: completed, failed or aborted. */
  get stats$(): Observable<CheckpointStats> {
    return this.reports.asObservable();
  }

  /**
   * Makes ids continue after every checkpoint directory already there, counts the complete ones (and the shared
   * files they reference) for retention, and removes the directories that never got their `_metadata` (left by a
   * crash, they can never be restored) but for the shared files complete checkpoints reference.
   */
  async recover(completeIds: readonly number[]): Promise<void> {
    const { storage, job } = this.options;
    const ids = (await storage.list(job)).map(checkpointIdOf).filter((id): id is number => id !== undefined);
    this.nextId = Math.max(0, ...ids) + 1;
    this.retained = [...completeIds].sort((a, b) => a - b);
    for (const id of this.retained) this.references.set(id, await readSharedFiles(storage, job, id));
    await removeCheckpointDirs(storage, job, ids.filter((id) => !completeIds.includes(id)), this.neededFiles());
  }

  /** The next checkpoint is full, and none in flight may become the chain's head. */
  private resetChain(): void {
    this.chain = undefined;
    this.chainEpoch++;
  }

  /** Whether keyed backends should track their changes: checkpoints are incremental. */
  get incremental(): boolean {
    return this.options.incremental !== undefined;
  }

  attach(participants: CheckpointParticipants): void {
    this.participants = participants;
    this.resetChain();
    this.finalTriggered = false;
    this.finalCheckpoint = undefined;
  }

  /** The id the next checkpoint gets, which only ever grows. */
  get nextCheckpointId(): number {
    return this.nextId;
  }

  /**
   * Makes the next checkpoint's id `id` (ids only grow: a smaller one is ignored). The test harness uses it so that
   * `pushBarrier(5)` starts checkpoint 5, numbered as the test says, as Flink's harness takes the id it is given.
   */
  skipToId(id: number): void {
    this.nextId = Math.max(this.nextId, id);
  }

  /** The attempt ended: abort what is in flight; its partial files are removed. */
  detach(reason: unknown): void {
    this.participants = undefined;
    for (const pending of this.pending.values()) this.abort(pending, reason, 'aborted');
  }

  /** Whether a periodic checkpoint may start now (`maxConcurrent`, `minPause`). */
  mayTriggerPeriodic(): boolean {
    return (
      this.participants !== undefined &&
      // After the final checkpoint nothing follows but the end of input: no barrier could reach a task.
      !this.finalTriggered &&
      this.pending.size < this.options.maxConcurrent &&
      this.options.scheduler.now() - this.lastEndedAt >= this.options.minPause
    );
  }

  /**
   * Resolves once no aborted checkpoint can still become complete, so that a restore sees the final state, and the
   * checkpoints subsumed so far are removed.
   */
  async settled(): Promise<void> {
    await this.settling;
    await this.retiring;
    await this.historyWrites;
  }

  /**
   * Starts a checkpoint (or, with `savepoint`, a savepoint into that directory) once fewer than `maxConcurrent` are
   * in flight; resolves when it is complete.
   */
  async trigger(final = false, savepoint?: SavepointTarget): Promise<CheckpointStats> {
    while (this.pending.size >= this.options.maxConcurrent) {
      await Promise.race(Array.from(this.pending.values(), (p) => p.result.catch(() => undefined)));
    }
    // Once the input has ended, the final checkpoint holds everything up to the end: a checkpoint asked for after
    // it (a job restored at the end of its input ends at once) is that one, complete or still in flight.
    if (this.finalCheckpoint && !final && !savepoint) return this.finalCheckpoint;
    const participants = this.participants;
    if (!participants) throw new CheckpointAbortedError(`job '${this.options.job}' is not running; no checkpoint was taken`);
    if (this.finalTriggered) throw new CheckpointAbortedError(`job '${this.options.job}' is finishing: its final checkpoint was taken`);
    if (final) this.finalTriggered = true;
    const { scheduler, timeout, job } = this.options;
    const id = this.nextId++;
    let resolve!: (stats: CheckpointStats) => void;
    let reject!: (error: unknown) => void;
    const result = new Promise<CheckpointStats>((res, rej) => ((resolve = res), (reject = rej)));
    const now = scheduler.now();
    const chain = this.chain;
    const fullEvery = this.options.incremental?.fullEvery ?? 1;
    // A delta only on top of the checkpoint completed last with nothing in flight (a delta is relative to the
    // previous snapshot), while the chain is short and its deltas smaller than its base, so restores stay bounded.
    const delta = !savepoint && chain !== undefined && this.pending.size === 0 && chain.deltas + 1 < fullEvery && chain.deltaBytes < chain.baseBytes;
    if (savepoint) this.resetChain();
    const pending: PendingCheckpoint = {
      id,
      dir: savepoint ? savepointDir(savepoint.dir, job, id) : checkpointDir(job, id),
      storage: savepoint?.storage ?? this.options.storage,
      barrier: new CheckpointBarrier(id, now, final, savepoint ? 'savepoint' : 'checkpoint'),
      startedAt: now,
      participants,
      waiting: new Set(participants.tasks.keys()),
      persisting: new Set(),
      operators: new Map(),
      stats: [],
      result,
      resolve,
      reject,
      aborted: false,
      base: delta ? chain : undefined,
      epoch: this.chainEpoch,
      deltaOperators: new Set(),
    };
    this.pending.set(id, pending);
    pending.timeout = scheduler.schedule(() => {
      if (pending.committing || pending.aborted) return;
      this.failed(pending, new CheckpointAbortedError(this.timeoutMessage(pending)), 'aborted');
    }, timeout);
    if (final && !savepoint) this.finalCheckpoint = result;
    participants.injectBarrier(pending.barrier);
    return result;
  }

  /**
   * A task captured its state for checkpoint `id`: persist it off the processing path, then acknowledge. The state
   * is materialised on a later macrotask, so the barrier has travelled on first, and keyed state is written in
   * chunks of whole key groups (one file each, yielding to the event loop between them), so neither the payload nor
   * its encoding is ever whole in memory.
   */
  persist(id: number, task: { uid: string; subtask: number; range: KeyGroupRange | undefined }, state: TaskState, taskStats: TaskSnapshotStats): void {
    const pending = this.pending.get(id);
    const release = () => state.keyed?.release();
    if (!pending || pending.aborted) {
      release();
      return;
    }
    const { storage } = pending;
    const { uid, subtask, range } = task;
    pending.persisting.add(taskId(uid, subtask));
    const startedAt = performance.now();
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
      if (pending.aborted) return false;
      const path = `${pending.dir}/${file}`;
      await (setAside.length > 0 ? storage.writeStructured!(path, bytes, setAside) : storage.write(path, bytes));
      files.push({ file, subtask, keyGroups, bytes: bytes.length });
      return !pending.aborted;
    };
    yieldToEventLoop()
      .then(async () => {
        if (pending.aborted) return;
        const operator = (await state.operator) ?? undefined;
        let written: boolean;
        // A task with nothing to save (a stateless sink, a union without records in flight) writes no file: one fsync
        // less per checkpoint, and a restore finds no state for it, which is the same.
        if (state.keyed === undefined || range === undefined) written = operator === undefined ? true : await write(stateFileName(uid, subtask, undefined), null, { uid, operator });
        else {
          // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with `.call(state.keyed, …)`
          const changes = pending.base ? state.keyed.materializeChangeChunks : undefined;
          const fileEntries = this.options.chunkEntries ?? CHUNK_ENTRIES;
          // Rich values go beside the file where the storage clones them, but never into a savepoint, which stays self-contained.
          const setAside = storage.writeStructured !== undefined && pending.barrier.kind === 'checkpoint';
          if (changes === undefined && state.keyed.flatChunks === true) {
            const pieces = state.keyed.materializeChunks(Math.min(SLICE_ENTRIES, fileEntries));
            written = await this.writeFlatChunks(pieces, { uid, subtask, range }, operator, fileEntries, setAside, () => pending.aborted, write);
          } else {
            const chunks = (changes ?? state.keyed.materializeChunks).call(state.keyed, fileEntries);
            written = await this.writeChunks(chunks, { uid, subtask, range }, operator, setAside, write);
          }
          // A backend without deltas wrote its full state: that operator starts a new chain in this checkpoint.
          if (changes) pending.deltaOperators.add(uid);
          else pending.deltaOperators.delete(uid);
        }
        // Aborted (a timeout, say) while a write was in flight: abort already removed the directory, and this
        // write brought it back; remove it again, or a partial checkpoint stays until the next restore's cleanup.
        if (!written) {
          if (pending.aborted && !pending.committing) await storage.remove(pending.dir);
          return;
        }
        pending.stats.push({ uid, subtask, ...taskStats, asyncMs: performance.now() - startedAt, bytes: total });
        this.acknowledge(pending, taskId(uid, subtask), files);
      })
      .catch((error: unknown) => this.failed(pending, error, 'failed'))
      .finally(release);
  }

  /**
   * Writes keyed state chunk by chunk: one chunk is named after the task's key-group range as before
   * (`<uid>.<subtask>.kg-<start>-<end>`), several after their own range and position (`….kg-<first>-<last>.<n>`).
   * One chunk is read ahead to tell the two apart. Operator state goes into the first file. With `setAside`, each
   * chunk's rich values are set aside as it is materialised and written beside its file (`writeStructured`).
   */
  private async writeChunks(
    payloads: Iterable<KeyedStatePayload>,
    task: { uid: string; subtask: number; range: KeyGroupRange },
    operator: Json | undefined,
    setAside: boolean,
    write: (file: string, keyGroups: [number, number] | null, payload: OperatorStatePayload, setAside: readonly unknown[]) => Promise<boolean>,
  ): Promise<boolean> {
    const { uid, subtask, range } = task;
    const chunks = payloads[Symbol.iterator]();
    const materialize = () => {
      const values: unknown[] = [];
      return { next: setAside ? settingAside(values, () => chunks.next()) : chunks.next(), values };
    };
    let writing: Promise<boolean> | undefined;
    let { next, values } = materialize();
    if (next.done) return write(stateFileName(uid, subtask, range), [range.start, range.end], { uid, keyed: { states: [], keyGroups: [] }, operator }, []);
    for (let index = 0; !next.done; index++) {
      const chunk = next.value;
      const chunkValues = values;
      ({ next, values } = materialize());
      const single = index === 0 && next.done;
      // A delta's chunk may hold only removals (`keyGroups` empty): its range spans both lists.
      let first = Number.POSITIVE_INFINITY;
      let last = Number.NEGATIVE_INFINITY;
      for (const [group] of [...chunk.keyGroups, ...(chunk.removed ?? [])]) {
        first = Math.min(first, group);
        last = Math.max(last, group);
      }
      // Unbucketed entries (a heap full snapshot) may be of any key group of their range.
      if ((chunk.flat?.length ?? 0) > 0 || (chunk.flatNamespaced?.length ?? 0) > 0) {
        first = Math.min(first, chunk.range?.[0] ?? range.start);
        last = Math.max(last, chunk.range?.[1] ?? range.end);
      }
      const file = single ? stateFileName(uid, subtask, range) : `${stateFileName(uid, subtask, { start: first, end: last })}.${index}`;
      const keyGroups: [number, number] = single ? [range.start, range.end] : [first, last];
      // One write in flight while the next chunk is materialised and encoded: the fsync of one file overlaps the
      // CPU work of the next, and memory stays bounded to two chunks.
      if (writing && !(await writing)) return false;
      writing = write(file, keyGroups, { uid, keyed: chunk, operator: index === 0 ? operator : undefined }, chunkValues);
      // Its failure is seen when it is awaited (next round or at the end); until then it must not count as unhandled.
      writing.catch(() => undefined);
      await yieldToEventLoop();
    }
    return writing ? writing : true;
  }

  /**
   * Writes a snapshot whose pieces are flat (`KeyedSnapshot.flatChunks`) as `writeChunks` writes its chunks, files of
   * about `fileEntries` entries named alike, but each file built from small pieces (`SLICE_ENTRIES`), each piece
   * materialised and encoded in a macrotask of its own: the job's records run between pieces, so a large snapshot
   * does not stop them for the time of a whole file. With `setAside`, the rich values of a file's pieces are set aside
   * into one list, numbered across the file, and written beside it (`writeStructured`). Also the way to IndexedDB:
   * in Chromium, materialising and stringifying 100k entries as one chunk (`writeChunks`) took 45–55 ms, in pieces 15–20.
   */
  private async writeFlatChunks(
    pieces: Iterable<KeyedStatePayload>,
    task: { uid: string; subtask: number; range: KeyGroupRange },
    operator: Json | undefined,
    fileEntries: number,
    setAside: boolean,
    aborted: () => boolean,
    write: (file: string, keyGroups: [number, number] | null, payload: OperatorStatePayload | Uint8Array, setAside: readonly unknown[]) => Promise<boolean>,
  ): Promise<boolean> {
    const { uid, subtask, range } = task;
    const iterator = pieces[Symbol.iterator]();
    // The values set aside from the pieces of the file being built: a piece is materialised into the list of the
    // file it goes into.
    let values: unknown[] = [];
    const materialize = () => (setAside ? settingAside(values, () => iterator.next()) : iterator.next());
    let next = materialize();
    if (next.done) return write(stateFileName(uid, subtask, range), [range.start, range.end], { uid, keyed: { states: [], keyGroups: [] }, operator }, []);
    let writing: Promise<boolean> | undefined;
    for (let index = 0; !next.done; index++) {
      const fileRange: [number, number] = next.value.range ?? [range.start, range.end];
      const file = new FlatStateFileBuilder(uid, next.value.states, fileRange);
      const fileValues = values;
      for (;;) {
        file.add(next.value);
        await yieldToEventLoop();
        if (aborted()) {
          // Aborted: the write in flight settles before the caller removes what it wrote.
          await writing?.catch(() => undefined);
          return false;
        }
        // A full file takes no more pieces: the next one is materialised into the next file's list.
        const full = file.entries >= fileEntries;
        if (full) values = [];
        next = materialize();
        if (next.done || full) break;
      }
      const single = index === 0 && next.done === true;
      const name = single ? stateFileName(uid, subtask, range) : `${stateFileName(uid, subtask, { start: fileRange[0], end: fileRange[1] })}.${index}`;
      const bytes = file.finish(index === 0 ? operator : undefined, fileValues.length);
      // One write in flight while the next file is built, as in `writeChunks`.
      if (writing && !(await writing)) return false;
      writing = write(name, single ? [range.start, range.end] : fileRange, bytes, fileValues);
      writing.catch(() => undefined);
    }
    return writing ? writing : true;
  }

  /**
   * Why checkpoint `pending` timed out, naming the tasks that did not acknowledge: those whose barrier never arrived
   * (blocked upstream, or aligning at an operator with several inputs) and those still persisting their state. Only
   * the latter are helped by a longer timeout or smaller state.
   */
  private timeoutMessage(pending: PendingCheckpoint): string {
    const { job, timeout } = this.options;
    const name = (task: string) => {
      const { uid, subtask } = pending.participants.tasks.get(task)!;
      return `'${uid}' subtask ${subtask}`;
    };
    const waiting = [...pending.waiting];
    const persisting = waiting.filter((task) => pending.persisting.has(task)).map(name);
    const unreached = waiting.filter((task) => !pending.persisting.has(task)).map(name);
    // A job with many subtasks would make the message unreadable: the first ten, and how many more.
    const list = (names: string[]) => (names.length <= 10 ? names.join(', ') : `${names.slice(0, 10).join(', ')} and ${names.length - 10} more`);
    const head = `checkpoint ${pending.id} of job '${job}' did not complete within ${timeout} ms and was aborted`;
    const parts: string[] = [];
    if (unreached.length > 0) {
      parts.push(
        `its barrier never reached ${list(unreached)}: the flow before them is stuck (a source waiting for input, a slow function, or an ` +
          'operator with several inputs waiting for the barrier on another input); find what holds them up',
      );
    }
    if (persisting.length > 0) parts.push(`still persisting their state: ${list(persisting)}; raise checkpoints.timeout, make state smaller or use faster storage`);
    // (With every task acknowledged, `_metadata` is being written, which a timeout does not cut short.)
    return parts.length === 0 ? head : `${head}: ${parts.join('; ')}`;
  }

  /**
   * Task `task` declined checkpoint `id`: a newer checkpoint's barrier (`by`) overtook its alignment at an operator with
   * several inputs (Flink's CHECKPOINT_DECLINED_SUBSUMED). Without that task's acknowledgement it can never complete,
   * so it is aborted now instead of holding its `maxConcurrent` slot until the timeout. As in Flink's
   * CheckpointFailureManager, a subsumed checkpoint does not count against `tolerableFailures`.
   */
  decline(id: number, task: { uid: string; subtask: number }, by: number): void {
    const pending = this.pending.get(id);
    if (!pending || pending.aborted || pending.committing) return;
    const { job } = this.options;
    this.abort(
      pending,
      new CheckpointAbortedError(
        `checkpoint ${id} of job '${job}' was subsumed by checkpoint ${by} at '${task.uid}' subtask ${task.subtask}: the newer barrier arrived ` +
          `while it was still aligning; checkpoint ${by} goes on (if this happens to most checkpoints, lower maxConcurrent or raise the interval)`,
      ),
      'aborted',
      { subsumed: true },
    );
  }

  private acknowledge(pending: PendingCheckpoint, task: string, files: StateFileEntry[]): void {
    pending.persisting.delete(task);
    if (pending.aborted || !pending.waiting.delete(task)) return;
    const { uid, role } = pending.participants.tasks.get(task)!;
    const operator = pending.operators.get(uid) ?? { role, files: [] };
    operator.files.push(...files);
    pending.operators.set(uid, operator);
    if (pending.waiting.size === 0) this.complete(pending).catch((error: unknown) => this.failed(pending, error, 'failed'));
  }

  private async complete(pending: PendingCheckpoint): Promise<void> {
    const { job, scheduler, maxParallelism } = this.options;
    const { storage } = pending;
    const savepoint = pending.barrier.kind === 'savepoint';
    const stateBytes = pending.stats.reduce((sum, op) => sum + op.bytes, 0);
    // A delta's operators list their new files first (the first carries the operator state), then the chain's.
    const chain = pending.base;
    const operators = Array.from(pending.operators, ([uid, { role, files }]) => ({
      uid,
      role,
      files: chain && pending.deltaOperators.has(uid) ? [...files, ...(chain.files.get(uid) ?? [])] : files,
    }));
    const sharedBytes = operators.reduce((sum, { files }) => sum + files.reduce((n, entry) => n + (entry.checkpoint === undefined ? 0 : entry.bytes), 0), 0);
    const metadata: CheckpointMetadata = {
      job,
      id: pending.id,
      kind: pending.barrier.kind,
      timestamp: pending.startedAt,
      maxParallelism,
      operators,
      stats: { durationMs: scheduler.now() - pending.startedAt, bytes: stateBytes, fullSize: stateBytes + sharedBytes, operators: pending.stats },
    };
    const bytes = encodeFile('metadata', metadata);
    if (pending.aborted) return;
    pending.committing = storage.write(`${pending.dir}/${METADATA_FILE}`, bytes);
    await pending.committing;
    if (pending.aborted) return;
    // From here the checkpoint exists: a restore will use it, so sinks may commit what it covers.
    this.pending.delete(pending.id);
    pending.timeout?.unsubscribe();
    this.consecutiveFailures = 0;
    this.lastEndedAt = scheduler.now();
    const stats = this.report(pending, 'completed', undefined, stateBytes + bytes.length, stateBytes + sharedBytes + bytes.length);
    this.completed.push(stats);
    if (!savepoint) {
      // Flink drops the pending checkpoints a completed one subsumes: restores would never pick them over this one.
      for (const older of this.pending.values()) {
        if (older.id < pending.id && older.barrier.kind === 'checkpoint' && !older.committing) {
          const reason = `checkpoint ${older.id} of job '${job}' was subsumed by checkpoint ${pending.id}, which completed first`;
          // Taken before this one, its snapshots are older than the chain's new head: the chain stays.
          this.abort(older, new CheckpointAbortedError(reason), 'aborted', { subsumed: true, resetChain: false });
        }
      }
      this.retained.push(pending.id);
      this.references.set(pending.id, sharedFilesOf(metadata));
      // The head of a chain is the checkpoint whose snapshot was taken last: the backends' changes run from there.
      const newest = pending.id === this.nextId - 1;
      if (this.options.incremental && newest && pending.epoch === this.chainEpoch) this.chain = this.nextChain(pending, operators, chain, stateBytes);
    }
    try {
      await pending.participants.notifyComplete(pending.id);
    } catch (error) {
      pending.participants.fail(error);
      pending.reject(error);
      return;
    }
    // As in Flink, subsumed checkpoints are discarded after the new one is reported complete, not before: their
    // removal (a storage round trip per directory) is not part of a checkpoint's latency. A removal that fails
    // leaves the directories in place, and the next one, which removes every id below the oldest retained, retries them.
    if (!savepoint) this.retiring = this.retiring.then(() => this.applyRetention()).catch(() => undefined);
    pending.resolve(stats);
  }

  /** The chain the next checkpoint builds on after `pending` completed with `operators` on top of `chain`. */
  private nextChain(pending: PendingCheckpoint, operators: CheckpointMetadata['operators'], chain: Chain | undefined, bytes: number): Chain {
    const files = new Map(
      operators.map(({ uid, files }) => [uid, files.filter((entry) => entry.keyGroups !== null).map((entry) => ({ ...entry, checkpoint: entry.checkpoint ?? pending.id }))]),
    );
    return chain
      ? { id: pending.id, files, deltas: chain.deltas + 1, baseBytes: chain.baseBytes, deltaBytes: chain.deltaBytes + bytes }
      : { id: pending.id, files, deltas: 0, baseBytes: bytes, deltaBytes: 0 };
  }

  private report(
    pending: PendingCheckpoint,
    status: CheckpointStats['status'],
    error: Error | undefined,
    bytes: number,
    fullSize = bytes,
  ): CheckpointStats {
    const { scheduler } = this.options;
    const { storage } = pending;
    const stats: CheckpointStats = {
      id: pending.id,
      status,
      ...(error === undefined ? {} : { reason: error.message, error: error.name }),
      path: storage.describe ? storage.describe(pending.dir) : pending.dir,
      timestamp: pending.startedAt,
      durationMs: scheduler.now() - pending.startedAt,
      bytes,
      fullSize,
      final: pending.barrier.final,
      kind: pending.barrier.kind,
      operators: pending.stats,
    };
    this.ended.push(stats);
    this.reports.next(stats);
    return stats;
  }

  /** Keeps the newest `retain` completed checkpoints; older directories go, complete or not. */
  private async applyRetention(): Promise<void> {
    const { storage, job, retain } = this.options;
    for (const id of this.retained.slice(0, -retain)) this.references.delete(id);
    this.retained = this.retained.slice(-retain);
    const oldestKept = this.retained[0] ?? this.nextId;
    const ids = (await storage.list(job)).map(checkpointIdOf).filter((id): id is number => id !== undefined && id < oldestKept);
    // Files a retained incremental checkpoint still references stay (their directory stops being a checkpoint).
    await removeCheckpointDirs(storage, job, ids, this.neededFiles());
  }

  /**
   * Adds a failed or aborted checkpoint to the job's failure history file in its checkpoint storage, behind the writes
   * before it. The file is diagnostics: when it cannot be read it is started anew, and when it cannot be written (the
   * storage that failed the checkpoint may be failing) the job goes on; both are warned about, once per run.
   */
  private recordFailure(stats: CheckpointStats): void {
    const { storage, job, warn } = this.options;
    const warnOnce = (message: string) => {
      if (this.historyWarned) return;
      this.historyWarned = true;
      warn?.(message);
    };
    this.historyWrites = this.historyWrites
      .then(async () => {
        this.failures ??= await readFailureHistory(storage, job).catch((error: unknown) => {
          warnOnce(`job '${job}': its failure history is ignored and started anew: ${(error as Error).message}`);
          return [];
        });
        this.failures = [...this.failures, failedCheckpointOf(stats)].slice(-FAILURE_HISTORY_LENGTH);
        await writeFailureHistory(storage, job, this.failures);
      })
      .catch((error: unknown) => warnOnce(`job '${job}': checkpoint ${stats.id} failed and could not be recorded in its failure history: ${(error as Error).message}`));
  }

  /** The shared files the retained checkpoints reference: reference counting over `references`. */
  private neededFiles(): Set<string> {
    return new Set(this.retained.flatMap((id) => this.references.get(id) ?? []));
  }

  /** Deletes every checkpoint of the job: `retainOnCancel: false`. */
  async deleteAll(): Promise<void> {
    const { storage, job } = this.options;
    await storage.remove(job);
  }

  /** A checkpoint failed (a task, the storage, a timeout): abort it, and fail the job past the tolerated count. */
  private failed(pending: PendingCheckpoint, error: unknown, status: 'failed' | 'aborted'): void {
    if (pending.aborted) return;
    const participants = pending.participants;
    this.abort(pending, error, status);
    this.lastEndedAt = this.options.scheduler.now();
    if (++this.consecutiveFailures > this.options.tolerableFailures) {
      participants.fail(
        this.options.tolerableFailures === 0
          ? error
          : new CheckpointFailuresExceededError(
              `job '${this.options.job}': ${this.consecutiveFailures} checkpoints failed in a row, more than the ${this.options.tolerableFailures} tolerated; last cause: ${String((error as Error)?.message ?? error)}`,
              { cause: error },
            ),
      );
    }
  }

  /**
   * Ends `pending` unsuccessfully. A `subsumed` one (a newer checkpoint took over) is reported but not recorded in the
   * failure history at rest: with `maxConcurrent > 1` it is routine, and would crowd out real failures there.
   */
  private abort(
    pending: PendingCheckpoint,
    reason: unknown,
    status: 'failed' | 'aborted',
    { subsumed = false, resetChain = true }: { subsumed?: boolean; resetChain?: boolean } = {},
  ): void {
    pending.aborted = true;
    // Its snapshots consumed the backends' changes since the chain's last checkpoint: the next one must be full.
    if (resetChain) this.resetChain();
    pending.timeout?.unsubscribe();
    this.pending.delete(pending.id);
    const error =
      reason instanceof Error && !(reason instanceof CheckpointAbortedError) && status === 'failed'
        ? reason
        : reason instanceof CheckpointAbortedError
          ? reason
          : new CheckpointAbortedError(`checkpoint ${pending.id} of job '${this.options.job}' was aborted: ${String((reason as Error)?.message ?? reason)}`, {
              cause: reason,
            });
    pending.reject(error);
    const stats = this.report(pending, status, error, 0);
    if (!subsumed) this.recordFailure(stats);
    // Operators still aligning for it release what they hold.
    pending.participants.injectCancel(pending.id);
    // A checkpoint without _metadata never counts; removing its files keeps the directory tidy. One whose metadata
    // is being written may complete after all, and a restore may then use it: its files stay.
    if (!pending.committing) pending.storage.remove(pending.dir).catch(() => undefined);
    else this.settling = pending.committing.catch(() => undefined);
  }
}
