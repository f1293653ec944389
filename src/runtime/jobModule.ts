import { JobDefinitionError } from '../core/errors.js';
import { Job } from './job.js';

/** What a job module's export is given: how many workers run the job, and which one builds it (undefined on the main thread). */
export interface JobModuleContext {
  readonly workers: number;
  readonly worker: number | undefined;
}

/** A job module's export: builds the job (unstarted) with its graph. */
export type JobDefinition = (context: JobModuleContext) => Job;

/** The job that export `name` of a job module builds, or a definition error saying what the module must export. */
export function jobOf(module: Record<string, unknown>, name: string, url: string, context: JobModuleContext): Job {
  const define = module[name];
  if (typeof define !== 'function') {
    throw new JobDefinitionError(
      `job module ${url} has no function export '${name}': export a function (context: { workers, worker }) => createJob(…) with its graph built` +
        `${name === 'default' ? ' as the default export' : ''}, or name the export with startJob(url, { export })`,
    );
  }
  return buildJob(define as JobDefinition, `job module ${url}: export '${name}'`, context);
}

/**
 * The job `define` builds, checked to be an unstarted job; `what` names the definition in the error otherwise.
 * @example
 * const job = buildJob(defineJob, 'startJob', { workers: 2, worker: undefined });
 */
export function buildJob(define: JobDefinition, what: string, context: JobModuleContext): Job {
  const job = define(context);
  // Duck-typed: the main thread and the module may see two instances of the engine (a bundler's and the package's).
  if (!(job instanceof Job) && typeof (job as Partial<Job> | undefined)?.launch !== 'function') {
    throw new JobDefinitionError(`${what} must return an unstarted job (createJob(…) with its graph), got ${String(job)}`);
  }
  return job;
}
