import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { toWireError, type FromWorker } from '../runtime/workerProtocol.js';
import type { WorkerHost } from '../runtime/workerHost.js';

/** Node runs the worker entry as TypeScript from the sources (with a loader preloaded), as JavaScript from the build. */
const JOB_WORKER = import.meta.url.endsWith('.ts') ? './jobWorker.ts' : './jobWorker.js';
const BOOTSTRAP = new URL('./jobWorkerBootstrap.mjs', import.meta.url);

/** The thread ids of every job worker spawned in this process that has not exited yet. */
const live = new Set<number>();

/**
 * The thread ids of the job workers (`startJob`) of this process that have not exited: empty once every job ended,
 * since an attempt terminates all its workers before it settles. For leak checks in tests and health endpoints.
 * @example
 * await running.cancel();
 * assert.deepEqual(liveJobWorkers(), []);
 */
export function liveJobWorkers(): number[] {
  return [...live];
}

/** Where a Node job worker finds its job: the module, the export that builds it, and modules to import first. */
export interface NodeJobModule {
  readonly moduleUrl: string;
  readonly exportName: string;
  /** Modules each worker imports first (a TypeScript loader). */
  readonly preload: readonly string[];
  /** Node flags of the workers; the main thread's when absent (Node's default). */
  readonly execArgv?: readonly string[];
}

/**
 * Job workers on Node's `worker_threads`: each gets its setup and ports in `workerData`, and a worker that exits
 * (even by `process.exit` in a user function) is seen by its `exit` event.
 * @example
 * launchOnWorkers(job, 2, {}, nodeWorkerHost({ moduleUrl, exportName: 'default', preload: [] }));
 */
export function nodeWorkerHost({ moduleUrl, exportName, preload, execArgv }: NodeJobModule): WorkerHost {
  const tracing = process.env.WEIR_WORKER_TRACE === '1';
  return {
    channel: () => {
      const { port1, port2 } = new MessageChannel();
      return [port1, port2];
    },
    spawn: (_index, { setup, outgoing, incoming }, events) => {
      const ports = [...outgoing, ...incoming].filter((port): port is MessagePort => port !== undefined);
      const worker = new Worker(BOOTSTRAP, {
        workerData: { setup, moduleUrl, exportName, preload, entry: new URL(JOB_WORKER, import.meta.url).href, outgoing, incoming },
        transferList: ports,
        ...(execArgv ? { execArgv: [...execArgv] } : {}),
      });
      const { threadId } = worker;
      live.add(threadId);
      const exited = new Promise<void>((resolve) => worker.once('exit', () => (live.delete(threadId), resolve())));
      worker.on('message', (message: FromWorker) => events.message(message));
      worker.on('error', (error) => events.error(toWireError(error)));
      worker.on('exit', (code) => events.exit(code));
      return {
        post: (message, transfer) => worker.postMessage(message, transfer),
        terminate: async () => {
          await Promise.all([worker.terminate().catch(() => undefined), exited]);
        },
      };
    },
    ...(tracing ? { trace: (line: string) => void process.stderr.write(`${line}\n`) } : {}),
  };
}
