import type { StartOptions, Job } from './job.js';
import { JobDefinitionError } from '../core/errors.js';
import { checkPlaceable } from './placement.js';
import type { RunningJob } from './runningJob.js';
import { WorkerAttempt } from './workerAttempt.js';
import { HEARTBEAT_MS } from './workerProtocol.js';
import type { WorkerHost } from './workerHost.js';

/** How long a worker may send nothing before it counts as hung, by default (Flink's `heartbeat.timeout`). */
export const DEFAULT_HEARTBEAT_TIMEOUT = 50_000;

/** The options of `startJob` (Node's and the browser's) about its workers. */
export interface WorkerOptions {
  /**
   * A worker that sends nothing for this long (ms; 50 s by default) has hung (a user function that never returns,
   * a Web Worker that closed itself): the attempt fails with `WorkerFailedError` and restarts as its strategy allows.
   */
  heartbeatTimeout?: number;
}

/**
 * Starts `job` (built on the main thread from the same definition the workers build) with every attempt on
 * `workers` workers of `host`: the part of `startJob` that Node and the browser share.
 * @example
 * const running = launchOnWorkers(job, 2, { restore: 'latest' }, nodeWorkerHost(module));
 */
export function launchOnWorkers(job: Job, workers: number, start: StartOptions, host: WorkerHost, options: WorkerOptions = {}): RunningJob {
  checkPlaceable(job.graph);
  checkAlignable(job);
  const heartbeatTimeout = options.heartbeatTimeout ?? DEFAULT_HEARTBEAT_TIMEOUT;
  if (!(Number.isFinite(heartbeatTimeout) && heartbeatTimeout >= 2 * HEARTBEAT_MS)) {
    throw new JobDefinitionError(`job '${job.name}': heartbeatTimeout must be at least ${2 * HEARTBEAT_MS} ms (two of a worker's heartbeats), got ${String(options.heartbeatTimeout)}`);
  }
  let attempt = 0;
  const queriesRefused =
    `job '${job.name}' runs on worker threads, which answer its queries (live and asOf) only while they run: it has not started yet or has ended; ` +
    'query it once started, or read its checkpoints with the State Processor (readSavepoint)';
  return job.launch(
    start,
    (execution, restored, restoringAtStart, storage) => new WorkerAttempt({ attempt: ++attempt, workers, host, execution, storage, restored, restoringAtStart, heartbeatTimeout }),
    queriesRefused,
    workers,
  );
}

/**
 * Unaligned checkpoints (`alignedTimeout`) would save the records in flight on the channels between workers, which
 * no worker holds: refused, rather than silently left aligned, with the ways that work.
 */
function checkAlignable(job: Job): void {
  const alignedTimeout = job.options.checkpoints?.alignedTimeout;
  if (alignedTimeout === undefined) return;
  throw new JobDefinitionError(
    `job '${job.name}': checkpoints.alignedTimeout (${alignedTimeout} ms) turns alignments unaligned, which jobs on worker threads do not do ` +
      '(the records in flight between workers are not saved); drop alignedTimeout (checkpoints stay aligned, exactly-once), ' +
      "use mode: 'at-least-once' (no alignment holds records back), or run the job on one thread with job.start()",
  );
}
