import type { WorkerHost } from '../runtime/workerHost.js';
import type { FromWorker } from '../runtime/workerProtocol.js';

/**
 * What weir uses of a module Web Worker (a DOM `Worker` is one), and of a `MessagePort`: declared here, structurally,
 * so that weir/browser's declarations type-check in an app compiled without the DOM library (a Node app that imports
 * weir/browser's IndexedDB storage for its types, say). The handlers are weir's to set, so their type is open.
 */
export interface JobWebWorker {
  onmessage: unknown;
  onerror: unknown;
  onmessageerror: unknown;
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  terminate(): void;
}

/** A port of a channel between two job workers (a DOM `MessagePort` is one); see `JobWebWorker`. */
export interface JobWorkerPort {
  onmessage: unknown;
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
}

/** Makes the module Web Worker that runs worker `worker` of `workers` (see `startJob` in weir/browser). */
export type WorkerFactory = (context: { readonly worker: number; readonly workers: number }) => JobWebWorker;

/** The first message a browser job worker gets: its setup and its ports (a Web Worker has no `workerData`). */
export interface BrowserWorkerInit {
  readonly t: 'init';
  readonly setup: import('../runtime/workerTasks.js').WorkerSetup;
  readonly outgoing: readonly (JobWorkerPort | undefined)[];
  readonly incoming: readonly (JobWorkerPort | undefined)[];
}

/**
 * Job workers on the browser's module Web Workers, made by the app's factory (only the app's own
 * `new Worker(new URL(…, import.meta.url), { type: 'module' })` is bundled by vite and its kin). The setup and the
 * ports go in a first `init` message. A Web Worker cannot be observed exiting: a worker that stops answering is
 * detected by its `error` event only (an uncaught error, a script that failed to load, a message that could not be
 * cloned); a worker that closes itself silently, or hangs, stalls the job until it is cancelled.
 * @example
 * launchOnWorkers(job, 2, {}, browserWorkerHost(() => new Worker(new URL('./job.worker.ts', import.meta.url), { type: 'module' })));
 */
export function browserWorkerHost(factory: WorkerFactory, workers: number): WorkerHost {
  return {
    channel: () => {
      const { port1, port2 } = new MessageChannel();
      return [port1, port2];
    },
    spawn: (index, { setup, outgoing, incoming }, events) => {
      const worker = factory({ worker: index, workers });
      worker.onmessage = (event: MessageEvent<FromWorker>) => events.message(event.data);
      worker.onerror = (event: ErrorEvent) => {
        // Handled here: the attempt fails and restarts; the page's console need not report it as uncaught too.
        event.preventDefault();
        const where = event.filename ? ` (${event.filename}:${event.lineno})` : ' (the worker script failed to load or threw while loading)';
        events.error({ name: 'Error', message: `${event.message || 'error event'}${where}` });
      };
      worker.onmessageerror = () => events.error({ name: 'DataCloneError', message: 'a message from the worker could not be deserialized' });
      const ports = [...outgoing, ...incoming].filter((port): port is MessagePort => port !== undefined);
      const init: BrowserWorkerInit = { t: 'init', setup, outgoing: outgoing as (MessagePort | undefined)[], incoming: incoming as (MessagePort | undefined)[] };
      worker.postMessage(init, ports);
      return {
        post: (message, transfer) => worker.postMessage(message, transfer ?? []),
        terminate: () => {
          worker.terminate();
          return Promise.resolve();
        },
      };
    },
  };
}
