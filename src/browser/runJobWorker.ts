import { JobDefinitionError } from '../core/errors.js';
import { withDefaultParallelism } from '../runtime/job.js';
import { buildJob, type JobDefinition } from '../runtime/jobModule.js';
import { serveWorker } from '../runtime/serveWorker.js';
import type { FromWorker, ToWorker } from '../runtime/workerProtocol.js';
import type { BrowserWorkerInit } from './browserWorkerHost.js';

/** The scope of a dedicated Web Worker, as much of it as a job worker uses (the DOM lib has no WorkerGlobalScope). */
interface WorkerScope {
  onmessage: ((event: MessageEvent) => void) | null;
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
}

/**
 * The body of a job's module Web Worker (weir/browser's `startJob`): waits for the main thread's `init`, builds the
 * job from `define` — the same definition the main thread passed to `startJob` — and runs this worker's share of
 * its subtasks. Call it once, at the top of the worker module.
 * @example
 * // job.worker.ts
 * import { runJobWorker } from 'weir/browser';
 * import defineJob from './job';
 * runJobWorker(defineJob);
 */
export function runJobWorker(define: JobDefinition): void {
  const scope = globalThis as unknown as WorkerScope;
  if (typeof document !== 'undefined') {
    throw new JobDefinitionError('runJobWorker must run in a Web Worker (the module a startJob worker factory creates), not in the page');
  }
  scope.onmessage = (event: MessageEvent<BrowserWorkerInit>) => {
    const { setup, outgoing, incoming } = event.data;
    const { worker, workers } = setup.placement;
    void serveWorker(
      {
        setup,
        post: (message: FromWorker, transfer?: readonly ArrayBuffer[]) => scope.postMessage(message, transfer ?? []),
        outgoing,
        listen: (onMain, onData) => {
          scope.onmessage = (next: MessageEvent<ToWorker>) => onMain(next.data);
          incoming.forEach((port, from) => {
            if (port) port.onmessage = (next: MessageEvent) => onData(from, next.data);
          });
        },
      },
      () => withDefaultParallelism(workers, () => buildJob(define, `runJobWorker: the job definition (worker ${worker})`, { workers, worker })),
    );
  };
}
