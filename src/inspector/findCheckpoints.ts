import { FAILURE_HISTORY_FILE, checkpointIdOf, savepointOf } from '../storage/layout.js';
import type { CheckpointStorage } from '../core/types.js';
import type { CheckpointRef } from './checkpointSummary.js';

// Finding checkpoints and savepoints in a storage by their directory names alone, without reading a file.

/**
 * What a directory is by its path: a checkpoint (`<job>/chk-<id>`) or a savepoint (`…/savepoint-<job>-<id>-<random>`,
 * wherever it was written); undefined for anything else.
 */
export function checkpointRefOf(path: string): CheckpointRef | undefined {
  const name = basename(path);
  const id = checkpointIdOf(name);
  if (id !== undefined) {
    const job = basename(dirname(path));
    return job === '' ? undefined : { kind: 'checkpoint', job, id, path };
  }
  const savepoint = savepointOf(name);
  return savepoint && { kind: 'savepoint', ...savepoint, path };
}

/**
 * The checkpoints and savepoints under `root`, by job and id: the `chk-<id>` directories of the jobs among its
 * children, and the savepoints among its children and theirs (the default `savepoints` directory, a job's
 * directory). Only names are listed; savepoints written deeper are found by inspecting their own directory.
 */
export async function findCheckpoints(storage: CheckpointStorage, root = ''): Promise<CheckpointRef[]> {
  const found: CheckpointRef[] = [];
  for (const name of await storage.list(root)) {
    const path = join(root, name);
    const ref = checkpointRefOf(path);
    if (ref) {
      found.push(ref);
      continue;
    }
    for (const child of await storage.list(path)) {
      const inner = checkpointRefOf(join(path, child));
      if (inner) found.push(inner);
    }
  }
  return found.sort((a, b) => compare(a.job, b.job) || a.id - b.id || compare(a.kind, b.kind) || compare(a.path, b.path));
}

/**
 * The names of the jobs with checkpoints or savepoints under `root` (see `findCheckpoints`), and, at the storage's
 * root, those with only a failure history (every checkpoint failed).
 */
export async function listJobs(storage: CheckpointStorage, root = ''): Promise<string[]> {
  const refs = await findCheckpoints(storage, root);
  return Array.from(new Set([...refs.map((ref) => ref.job), ...(root === '' ? await jobsWithFailureHistory(storage, refs) : [])]));
}

/** The jobs under the root with a failure history but no checkpoint or savepoint among `refs`. */
export async function jobsWithFailureHistory(storage: CheckpointStorage, refs: readonly CheckpointRef[]): Promise<string[]> {
  const known = new Set(refs.map((ref) => ref.job));
  const found: string[] = [];
  for (const name of await storage.list('')) {
    if (known.has(name) || checkpointRefOf(name)) continue;
    if ((await storage.list(name)).includes(FAILURE_HISTORY_FILE)) found.push(name);
  }
  return found;
}

function join(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function dirname(path: string): string {
  return path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
