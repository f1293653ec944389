import { checkOptions } from '../core/checkOptions.js';
import { JobDefinitionError } from '../core/errors.js';
import { withDefaultParallelism, type StartOptions } from '../runtime/job.js';
import { buildJob, type JobDefinition } from '../runtime/jobModule.js';
import { launchOnWorkers, type WorkerOptions } from '../runtime/launchOnWorkers.js';
import type { RunningJob } from '../runtime/runningJob.js';
import { browserWorkerHost, type WorkerFactory } from './browserWorkerHost.js';

export type BrowserStartJobOptions = StartOptions &
  WorkerOptions & {
  /** Module Web Workers that run the job's subtasks (at least 1). */
  workers: number;
  /**
   * Makes one worker, called for each worker of each attempt (a restart makes new ones). It must be written in the
   * app's code as `new Worker(new URL('./job.worker.ts', import.meta.url), { type: 'module' })`, the one form
   * bundlers (vite, webpack) recognise and bundle; that module calls `runJobWorker` with the same definition.
   */
  worker: WorkerFactory;
};

/**
 * Starts a job on module Web Workers: the browser's `startJob`, on the same design as weir/node's. User functions
 * cannot cross threads, so the job is a definition that the page and every worker build the same graph from: the
 * page passes it here (to read the job's options and graph, and to run the checkpoint coordinator, the storage's
 * lock, restarts and restores), and the worker module passes it to `runJobWorker`. The workers run the subtasks: a
 * source's split i and a keyed operator's instance i in worker i mod workers, sinks in worker 0.
 *
 * Storage: workers reach the job's checkpoint storage (memory or IndexedDB) through the page, which holds the real
 * one. A worker could open IndexedDB itself (it is there in workers, on the same origin's databases), but a memory
 * storage cannot be shared at all, the page holds the job's lock and writes `_metadata`, and one path for every
 * storage keeps restores and savepoints into another storage the same; the cost is one copy of each state file
 * between threads, which is small next to encoding it (done in the workers, in parallel).
 * @example
 * // job.ts
 * export default ({ workers }: JobModuleContext) => {
 *   const job = createJob({ name: 'clicks', checkpoints: { storage: indexedDbCheckpointStorage(), interval: 1000 } });
 *   job.source(fromArray(clicks, { splits: 2 * workers }), { uid: 'clicks' })
 *     .pipe(keyBy((c) => c.user), reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'per-user' }), forEach(show));
 *   return job;
 * };
 * // job.worker.ts
 * import { runJobWorker } from 'weir/browser';
 * import defineJob from './job';
 * runJobWorker(defineJob);
 * // main.ts
 * import defineJob from './job';
 * const running = startJob(defineJob, {
 *   workers: 2,
 *   worker: () => new Worker(new URL('./job.worker.ts', import.meta.url), { type: 'module' }),
 *   restore: 'latest',
 * });
 * await running.done;
 */
export function startJob(define: JobDefinition, options: BrowserStartJobOptions): RunningJob {
  const { workers, worker, heartbeatTimeout, ...start } = options ?? ({} as BrowserStartJobOptions);
  checkOptions('startJob', options, ['workers', 'worker', 'heartbeatTimeout', 'restore', 'allowNonRestoredState']);
  if (typeof define !== 'function') throw new JobDefinitionError(`startJob: the job definition must be a function ({ workers, worker }) => createJob(…), got ${String(define)}`);
  if (!(Number.isInteger(workers) && workers >= 1)) throw new JobDefinitionError(`startJob: workers must be an integer ≥ 1, got ${String(workers)}`);
  if (typeof worker !== 'function') {
    throw new JobDefinitionError("startJob: give worker: () => new Worker(new URL('./job.worker.ts', import.meta.url), { type: 'module' }), a module that calls runJobWorker(define)");
  }
  const job = withDefaultParallelism(workers, () => buildJob(define, 'startJob: the job definition', { workers, worker: undefined }));
  return launchOnWorkers(job, workers, start, browserWorkerHost(worker, workers), { heartbeatTimeout });
}
