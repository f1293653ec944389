// The engine's entry in a worker thread of a job started with `startJob`: builds the job from its module, as every
// other worker and the main thread do, and runs this worker's share of its subtasks (see WorkerTasks).
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { JobDefinitionError } from '../core/errors.js';
import { withDefaultParallelism, type Job } from '../runtime/job.js';
import { WorkerTasks, type WorkerSetup } from '../runtime/workerTasks.js';
import { toWireError, type FromWorker, type ToWorker } from '../runtime/workerProtocol.js';
import { jobOf } from './jobModule.js';

const { setup, moduleUrl, exportName, outgoing, incoming } = workerData as {
  setup: WorkerSetup;
  moduleUrl: string;
  exportName: string;
  outgoing: (MessagePort | undefined)[];
  incoming: (MessagePort | undefined)[];
};
const main = parentPort!;
const post = (message: FromWorker) => main.postMessage(message);
const { worker, workers } = setup.placement;

// Messages can come before the job module is imported: they wait for the tasks.
let tasks: WorkerTasks | undefined;
const early: ToWorker[] = [];
const earlyData: [number, unknown][] = [];
main.on('message', (message: ToWorker) => (tasks ? tasks.receive(message) : early.push(message)));
incoming.forEach((port, from) => port?.on('message', (message: unknown) => (tasks ? tasks.receiveData(from, message) : earlyData.push([from, message]))));

try {
  const module = (await import(moduleUrl.startsWith('file:') ? moduleUrl : pathToFileURL(moduleUrl).href)) as Record<string, unknown>;
  const job: Job = withDefaultParallelism(workers, () => jobOf(module, exportName, moduleUrl, { workers, worker }));
  tasks = new WorkerTasks(job, setup, { post, ports: outgoing });
  for (const message of early.splice(0)) tasks.receive(message);
  for (const [from, message] of earlyData.splice(0)) tasks.receiveData(from, message);
  void tasks.run();
} catch (error) {
  post({ t: 'error', a: setup.attempt, w: worker, error: toWireError(error instanceof Error ? error : new JobDefinitionError(String(error))) });
}
