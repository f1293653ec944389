import { readFailureHistory, type FailedCheckpoint } from '../checkpoint/failureHistory.js';
import type { CheckpointStorage } from '../core/types.js';
import type { CheckpointRef, CheckpointSummary, JobSummary, ProgressListener } from './checkpointSummary.js';
import { compare, findCheckpoints, jobsWithFailureHistory } from './findCheckpoints.js';
import { summarizeCheckpoint } from './summarizeCheckpoint.js';

/**
 * Reads what checkpoints and savepoints hold without the job's code, on any `CheckpointStorage` (the same layout
 * everywhere): which jobs, checkpoints and savepoints there are, whether each is complete, and per operator and state
 * the key counts, sizes and key-group histogram. Backs `weir inspect` and the visual inspector. Damaged files never
 * throw: they are reported on the checkpoint with their error.
 */

export type * from './checkpointSummary.js';
export { checkpointRefOf, findCheckpoints, listJobs } from './findCheckpoints.js';
export { summarizeCheckpoint } from './summarizeCheckpoint.js';

/**
 * Summaries of the checkpoints and savepoints under the storage's root, of the given jobs (every job by default) and
 * directories (every one by default), reading each file once.
 * @example const jobs = await inspectStorage(fsCheckpointStorage('./checkpoints'), { onProgress: ({ done, total }) => … });
 */
export async function inspectStorage(
  storage: CheckpointStorage,
  options: { jobs?: string[]; paths?: string[]; onProgress?: ProgressListener } = {},
): Promise<JobSummary[]> {
  const { jobs, paths } = options;
  const refs = (await findCheckpoints(storage)).filter((ref) => (!jobs || jobs.includes(ref.job)) && (!paths || paths.includes(ref.path)));
  const plan: { ref: CheckpointRef; files: string[] }[] = [];
  for (const ref of refs) plan.push({ ref, files: await storage.list(ref.path) });
  const total = plan.reduce((sum, { files }) => sum + files.length, 0);
  let done = 0;
  const onFile = (file: string) => options.onProgress?.({ done: ++done, total, file });
  const summaries = new Map<string, JobSummary & { failures: FailedCheckpoint[]; failuresError?: string }>();
  // A job whose checkpoints all failed has no chk-<id> directory left, only its failure history.
  const failedOnly = jobs || paths ? [] : await jobsWithFailureHistory(storage, refs);
  for (const job of jobs ?? [...refs.map((ref) => ref.job), ...failedOnly]) if (!summaries.has(job)) summaries.set(job, { job, checkpoints: [], savepoints: [], failures: [] });
  for (const { ref, files } of plan) {
    const summary = summaries.get(ref.job)!;
    (ref.kind === 'checkpoint' ? summary.checkpoints : summary.savepoints).push(await summarizeCheckpoint(storage, ref, { files, onFile }));
  }
  if (!paths) {
    for (const summary of summaries.values()) {
      try {
        summary.failures = await readFailureHistory(storage, summary.job);
      } catch (error) {
        summary.failuresError = (error as Error).message;
      }
    }
  }
  return Array.from(summaries.values());
}

/**
 * A job's checkpoints and savepoints in one list by id, a checkpoint before a savepoint of the same id: a run's
 * checkpoints and savepoints share their ids, so in this order they read as the run's history.
 */
export function checkpointHistory(job: JobSummary): CheckpointSummary[] {
  return [...job.checkpoints, ...job.savepoints].sort((a, b) => a.id - b.id || compare(a.kind, b.kind) || compare(a.path, b.path));
}
