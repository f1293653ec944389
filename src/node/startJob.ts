import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkOptions } from '../core/checkOptions.js';
import { JobDefinitionError } from '../core/errors.js';
import { withDefaultParallelism, type StartOptions } from '../runtime/job.js';
import { jobOf } from '../runtime/jobModule.js';
import { launchOnWorkers, type WorkerOptions } from '../runtime/launchOnWorkers.js';
import type { RunningJob } from '../runtime/runningJob.js';
import { nodeWorkerHost } from './nodeWorkerHost.js';

export type { JobDefinition, JobModuleContext } from '../runtime/jobModule.js';

export type StartJobOptions = StartOptions &
  WorkerOptions & {
  /** Worker threads that run the job's subtasks (at least 1). */
  workers: number;
  /** The job module's export that builds the job (default `'default'`). */
  export?: string;
  /** Modules each worker imports before the job module, e.g. a TypeScript loader: URLs, or file paths from the working directory. */
  preload?: (string | URL)[];
  /**
   * Node flags of the worker threads (`Worker`'s `execArgv`); by default they inherit the main thread's, a loader
   * given with `--import` included. `[]` starts workers bare, e.g. when the main thread runs under a TypeScript
   * loader that the built job does not need.
   */
  execArgv?: string[];
};

/**
 * Starts a job on worker threads. The job is defined in a module whose export builds it (user functions cannot cross
 * threads, so every worker builds the same graph from the module, as every Flink TaskManager runs the job's code).
 * The main thread imports it too, to read the job's options and graph, and runs the checkpoint coordinator, the
 * storages' lock, restarts and restores; the workers run the subtasks: a source's split subtask i and a keyed
 * operator's instance i in worker i mod workers, a sink or a stateful operator with one instance in worker 0, the
 * stateless operators in every worker. Keyed operators get `workers` instances unless the job sets `parallelism`.
 * @example
 * // clicks.job.ts
 * export default () => {
 *   const job = createJob({ name: 'clicks', checkpoints: { storage: fsCheckpointStorage('./ck'), interval: 1000 } });
 *   job.source(fromArray(clicks, { splits: 8 }), { uid: 'clicks' })
 *     .pipe(keyBy((c) => c.user), reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'per-user' }), toFile('out.jsonl'));
 *   return job;
 * };
 * // main.ts
 * const running = await startJob(new URL('./clicks.job.js', import.meta.url), { workers: 2, restore: 'latest' });
 * await running.done;
 */
/**
 * A module to import in a worker, as a URL: the worker's first module may be a data: URL (in the build), from which
 * a relative path would not resolve. A bare package name is passed on as it is.
 */
function moduleHref(entry: string | URL): string {
  if (entry instanceof URL) return entry.href;
  if (entry.startsWith('.') || entry.startsWith('/')) return pathToFileURL(resolve(entry)).href;
  return entry;
}

export async function startJob(moduleUrl: string | URL, options: StartJobOptions): Promise<RunningJob> {
  const { workers, export: exportName = 'default', preload = [], execArgv, heartbeatTimeout, ...start } = options ?? ({} as StartJobOptions);
  const url = moduleUrl instanceof URL || moduleUrl.startsWith('file:') ? String(moduleUrl) : pathToFileURL(resolve(moduleUrl)).href;
  checkOptions(`startJob (${url})`, options, ['workers', 'export', 'preload', 'execArgv', 'heartbeatTimeout', 'restore', 'allowNonRestoredState']);
  if (!(Number.isInteger(workers) && workers >= 1)) throw new JobDefinitionError(`startJob (${url}): workers must be an integer ≥ 1, got ${String(workers)}`);
  const module = (await import(url)) as Record<string, unknown>;
  const job = withDefaultParallelism(workers, () => jobOf(module, exportName, url, { workers, worker: undefined }));
  const host = nodeWorkerHost({ moduleUrl: url, exportName, preload: preload.map(moduleHref), ...(execArgv ? { execArgv } : {}) });
  return launchOnWorkers(job, workers, start, host, { heartbeatTimeout });
}
