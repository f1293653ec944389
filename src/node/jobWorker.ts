// The engine's entry in a worker thread of a job started with `startJob`: builds the job from its module, as every
// other worker and the main thread do, and runs this worker's share of its subtasks (see serveWorker).
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { withDefaultParallelism } from '../runtime/job.js';
import { jobOf } from '../runtime/jobModule.js';
import { serveWorker } from '../runtime/serveWorker.js';
import type { WorkerSetup } from '../runtime/workerTasks.js';
import type { FromWorker, ToWorker } from '../runtime/workerProtocol.js';

const { setup, moduleUrl, exportName, outgoing, incoming } = workerData as {
  setup: WorkerSetup;
  moduleUrl: string;
  exportName: string;
  outgoing: (MessagePort | undefined)[];
  incoming: (MessagePort | undefined)[];
};
const main = parentPort!;
const { worker, workers } = setup.placement;

await serveWorker(
  {
    setup,
    post: (message: FromWorker, transfer?: readonly ArrayBuffer[]) => main.postMessage(message, transfer),
    outgoing,
    listen: (onMain, onData) => {
      main.on('message', (message: ToWorker) => onMain(message));
      incoming.forEach((port, from) => port?.on('message', (message: unknown) => onData(from, message)));
    },
  },
  async () => {
    const module = (await import(moduleUrl.startsWith('file:') ? moduleUrl : pathToFileURL(moduleUrl).href)) as Record<string, unknown>;
    return withDefaultParallelism(workers, () => jobOf(module, exportName, moduleUrl, { workers, worker }));
  },
);
