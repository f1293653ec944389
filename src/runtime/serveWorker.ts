import { JobDefinitionError } from '../core/errors.js';
import type { Job } from './job.js';
import type { ExchangePort } from './workerExchange.js';
import { HEARTBEAT_MS, toWireError, type FromWorker, type ToWorker } from './workerProtocol.js';
import { WorkerTasks, type WorkerSetup } from './workerTasks.js';

/** A job worker's links as its platform gives them (Node's `worker_threads`, a browser's module Web Worker). */
export interface WorkerEndpoint {
  readonly setup: WorkerSetup;
  /** A protocol message to the main thread; `transfer` lists buffers moved with it instead of copied. */
  post(message: FromWorker, transfer?: readonly ArrayBuffer[]): void;
  /** The sending side of the channel to each other worker (undefined at this worker's own index). */
  readonly outgoing: readonly (ExchangePort | undefined)[];
  /** Starts delivering the main thread's messages and the other workers' frames (`from` is the sender's index). */
  listen(onMain: (message: ToWorker) => void, onData: (from: number, message: unknown) => void): void;
}

/**
 * Runs one job worker on any platform: listens at once (messages can come before the job is built: they wait for
 * the tasks), builds the job from its definition, as every other worker and the main thread do, and runs this
 * worker's share of its subtasks (see `WorkerTasks`). A definition that throws is reported to the main thread.
 * @example
 * serveWorker(endpoint, async () => buildJob(define, 'job.worker.ts', { workers, worker }));
 */
export async function serveWorker(endpoint: WorkerEndpoint, build: () => Job | Promise<Job>): Promise<void> {
  const { setup } = endpoint;
  const post = (message: FromWorker, transfer?: readonly ArrayBuffer[]) => endpoint.post(message, transfer);
  // From now until the main thread terminates this worker, which decides when silence means it hung: one at once, so
  // that a job definition that never returns is silence from its start.
  const heartbeat = () => post({ t: 'heartbeat', a: setup.attempt, w: setup.placement.worker });
  heartbeat();
  setInterval(heartbeat, HEARTBEAT_MS);
  let tasks: WorkerTasks | undefined;
  const early: ToWorker[] = [];
  const earlyData: [number, unknown][] = [];
  endpoint.listen(
    (message) => (tasks ? tasks.receive(message) : early.push(message)),
    (from, message) => (tasks ? tasks.receiveData(from, message) : earlyData.push([from, message])),
  );
  try {
    const job = await build();
    tasks = new WorkerTasks(job, setup, { post, ports: endpoint.outgoing });
    for (const message of early.splice(0)) tasks.receive(message);
    for (const [from, message] of earlyData.splice(0)) tasks.receiveData(from, message);
    void tasks.run();
  } catch (error) {
    post({ t: 'error', a: setup.attempt, w: setup.placement.worker, error: toWireError(error instanceof Error ? error : new JobDefinitionError(String(error))) });
  }
}
