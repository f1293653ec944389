import type { OperatorRole } from '../core/graph.js';
import type { Json, KeyedStatePayload } from '../core/types.js';
import type { OperatorCheckpointStats } from '../core/operatorCheckpointStats.js';

/**
 * The logical layout every checkpoint storage shares (so one inspector reads them all):
 *
 *     <job>/chk-<id>/<uid>.<subtask>.kg-<start>-<end>   one state file per operator instance
 *     <job>/chk-<id>/_metadata                          written last: a checkpoint without it does not exist
 *     <dir>/savepoint-<job>-<id>-<random>/…             a savepoint: the same files, in a directory the user picks
 *     <job>/_failed_checkpoints                         the job's recent failed and aborted checkpoints, with reasons
 */
export const METADATA_FILE = '_metadata';

/** See `failureHistory.ts`. */
export const FAILURE_HISTORY_FILE = '_failed_checkpoints';

export function checkpointDir(job: string, id: number): string {
  return `${job}/chk-${id}`;
}

/** The checkpoint id of a `chk-<id>` directory name, or undefined for anything else. */
export function checkpointIdOf(name: string): number | undefined {
  const match = /^chk-(\d+)$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

/**
 * A new savepoint's directory: `savepoint-<job>-<id>-<random>` in `dir` (`savepointOf` reads the name back).
 * Checkpoint ids start over in every run that is not restored from a checkpoint, so the random part (as in Flink's
 * savepoint names) keeps a savepoint from being written over the one the run was restored from.
 */
export function savepointDir(dir: string, job: string, id: number): string {
  const random = Array.from(crypto.getRandomValues(new Uint8Array(4)), (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${dir.replace(/\/+$/, '')}/savepoint-${job}-${id}-${random}`;
}

/**
 * The job and checkpoint id a savepoint directory's name carries (`savepoint-<job>-<id>-<random>`, see
 * `savepointDir`), or undefined for anything else. The id and random parts contain no `-`, so a job name may.
 */
export function savepointOf(name: string): { job: string; id: number } | undefined {
  const match = /^savepoint-(.+)-(\d+)-[0-9a-f]+$/.exec(name);
  return match ? { job: match[1]!, id: Number(match[2]) } : undefined;
}

export function stateFileName(uid: string, subtask: number, range: { start: number; end: number } | undefined): string {
  const safeUid = encodeURIComponent(uid);
  return range ? `${safeUid}.${subtask}.kg-${range.start}-${range.end}` : `${safeUid}.${subtask}`;
}

/** What one operator instance persisted: keyed state by key group, and/or operator (non-keyed) state. */
export interface OperatorStatePayload {
  uid: string;
  keyed?: KeyedStatePayload;
  operator?: Json;
}

export type { OperatorRole };

export interface StateFileEntry {
  file: string;
  subtask: number;
  keyGroups: [number, number] | null;
  bytes: number;
  /**
   * Incremental checkpoints: the earlier checkpoint whose directory holds this file (the file is shared, see
   * `sharedFiles.ts`); absent for a file of this checkpoint. Keyed files apply in checkpoint order: a base, then
   * the deltas after it.
   */
  checkpoint?: number;
}

/**
 * Where a state file of the checkpoint in directory `dir` is: in `dir`, or, shared from an earlier checkpoint of the
 * job (incremental), in that checkpoint's directory beside it.
 */
export function stateFilePath(dir: string, entry: Pick<StateFileEntry, 'file' | 'checkpoint'>): string {
  if (entry.checkpoint === undefined) return `${dir}/${entry.file}`;
  const jobDir = dir.includes('/') ? dir.slice(0, dir.lastIndexOf('/') + 1) : '';
  return `${jobDir}chk-${entry.checkpoint}/${entry.file}`;
}

/**
 * Whether an operator's files in a checkpoint build on earlier checkpoints' (incremental): its keyed state is then a
 * base and deltas, each key's latest value and removal applying over the files before (see `restoreOrder`).
 */
export function isIncremental(files: readonly StateFileEntry[]): boolean {
  return files.some((entry) => entry.checkpoint !== undefined);
}

/**
 * The positions of an operator's `files` in checkpoint `id`'s metadata in the order a restore applies their keyed
 * state: the base first, then each delta in checkpoint order. The coordinator lists a delta's own files before the
 * chain's; a stable sort keeps each checkpoint's files in their order.
 */
export function restoreOrder(files: readonly StateFileEntry[], id: number): number[] {
  return Array.from(files.keys()).sort((a, b) => (files[a]!.checkpoint ?? id) - (files[b]!.checkpoint ?? id));
}

/** The `_metadata` payload: everything needed to find and check a checkpoint's files. */
export interface CheckpointMetadata {
  job: string;
  id: number;
  /** Savepoints are taken on request, written elsewhere and never deleted by the job. */
  kind: 'checkpoint' | 'savepoint';
  timestamp: number;
  maxParallelism: number;
  operators: { uid: string; role: OperatorRole; files: StateFileEntry[] }[];
  stats: { durationMs: number; bytes: number; fullSize: number; operators: OperatorCheckpointStats[] };
}
