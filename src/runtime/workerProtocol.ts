import type { OperatorMetrics } from './jobMetrics.js';
import type { OperatorCheckpointStats } from '../core/operatorCheckpointStats.js';
import type { Key } from '../core/types.js';
import type { QueryableStateInfo } from '../query/queryableStateRegistry.js';
import type { KeyPage, KeyPageOptions } from '../query/stateQueries.js';
import type { SnapshotTarget, SnapshotTask, TaskStateHandles } from '../task/snapshotWriter.js';

/**
 * The messages between the main thread (the job's coordinator, its storages and lock) and the workers of one attempt
 * of a job started with `startJob`. Every message names its attempt, so that a message of a failed attempt's worker
 * can never be taken for one of the next attempt's. Plain data, so they cross as structured clones.
 */
export type ToWorker =
  /** Checkpoint `target.id` starts: its state goes to storage `storage` (of the main thread); the sources put in the barrier. */
  | { t: 'barrier'; a: number; target: SnapshotTarget; storage: StorageInfo; timestamp: number; final: boolean }
  | { t: 'end'; a: number; id: number }
  | { t: 'cancelCheckpoint'; a: number; id: number }
  /** Checkpoint `id` is complete: sinks commit, then the worker answers `committed`. */
  | { t: 'commit'; a: number; id: number }
  /** The final checkpoint completed: sinks finish, then the worker answers `done`. */
  | { t: 'finalDone'; a: number }
  | { t: 'drain'; a: number }
  /** A state query: live, every worker answers, the one that owns the key's group with its value; `asOf`, any worker that knows the state reads the checkpoint. */
  | { t: 'query'; a: number; request: number; name: string; key: Key; asOf?: number }
  /** A page of a state's keys: live, of this worker's key groups (the main thread merges the pages); `asOf`, of the whole checkpoint. */
  | { t: 'queryKeys'; a: number; request: number; name: string; options: KeyPageOptions }
  | { t: 'storageReply'; a: number; request: number; ok: true; value: unknown }
  | { t: 'storageReply'; a: number; request: number; ok: false; error: WireError };

/** How often a worker tells the main thread it is alive, from its own event loop (see `heartbeat`). */
export const HEARTBEAT_MS = 1_000;

export type FromWorker =
  /**
   * Sent every `HEARTBEAT_MS` from the moment the worker runs: a worker whose event loop never comes back (a user
   * function that loops, a Web Worker that called `close()`) stops sending it, which the main thread notices.
   */
  | { t: 'heartbeat'; a: number; w: number }
  /** The worker built the job, checked its graph and started its tasks. */
  | { t: 'ready'; a: number; w: number }
  /** Every source subtask of this worker finished (or drained): the job may take its final checkpoint. */
  | { t: 'finished'; a: number; w: number }
  /** The worker's tasks ended after the final checkpoint: it may be terminated. */
  | { t: 'done'; a: number; w: number }
  /** The worker's operator counters this attempt, sent each second and before `done` (see `JobMetricsRecorder.reportWorker`). */
  | { t: 'metrics'; a: number; w: number; operators: readonly OperatorMetrics[] }
  /** The queryable states registered in this worker so far (sent when there are more). */
  | { t: 'states'; a: number; w: number; states: readonly QueryableStateInfo[] }
  | { t: 'error'; a: number; w: number; error: WireError }
  | { t: 'persisting'; a: number; w: number; id: number; task: SnapshotTask }
  | { t: 'acknowledge'; a: number; w: number; id: number; task: SnapshotTask; handles: TaskStateHandles; stats: OperatorCheckpointStats }
  | { t: 'failed'; a: number; w: number; id: number; task: SnapshotTask; error: WireError }
  | { t: 'decline'; a: number; w: number; id: number; task: SnapshotTask; by: number }
  | { t: 'committed'; a: number; w: number; id: number }
  | { t: 'commitFailed'; a: number; w: number; id: number; error: WireError }
  /** A storage call; `take`: `data`'s buffer was transferred, and goes back with the reply (`CheckpointStorage.writeTaking`). */
  | { t: 'storage'; a: number; w: number; request: number; storage: number; op: StorageOp; path: string; data?: Uint8Array; take?: boolean }
  /**
   * The answer to `query` (`value`) or `queryKeys` (`keys`). `known`: the worker has the state (so the value,
   * undefined when its key is not in this worker's key groups); `error`: the query failed there (a bad option, a
   * checkpoint no longer retained).
   */
  | { t: 'queryReply'; a: number; w: number; request: number; known: boolean; value?: unknown; keys?: KeyPage; error?: WireError };

/** A main-thread storage as a worker knows it: by number, with what its messages and limits need. */
export interface StorageInfo {
  index: number;
  location: string;
  maxStateSize?: number;
}

export type StorageOp = 'read' | 'write' | 'list' | 'remove';

/** An error as it crosses threads: what a reader needs of it (its class name, message, stack and code). */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
}

export function toWireError(error: unknown): WireError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { name: error.name, message: error.message, stack: error.stack, ...(typeof code === 'string' || typeof code === 'number' ? { code: String(code) } : {}) };
  }
  return { name: 'Error', message: String(error) };
}

/** An `Error` with the name, message, stack and code of the error that crossed. */
export function fromWireError(wire: WireError): Error {
  const error = new Error(wire.message);
  error.name = wire.name;
  if (wire.stack !== undefined) error.stack = wire.stack;
  if (wire.code !== undefined) (error as Error & { code?: string }).code = wire.code;
  return error;
}

/** A protocol message in one line, for `WEIR_WORKER_TRACE=1`. */
export function describeMessage(direction: '→' | '←', worker: number, message: ToWorker | FromWorker): string {
  const { t, a } = message;
  const id = 'id' in message ? ` id=${message.id}` : 'target' in message ? ` id=${message.target.id}${message.final ? ' final' : ''}` : '';
  const task = 'task' in message ? ` ${message.task.uid}#${message.task.subtask}` : '';
  const storage = 'op' in message ? ` ${message.op} ${message.path}` : '';
  return `[weir worker] attempt ${a} ${direction} worker ${worker}: ${t}${id}${task}${storage}`;
}
