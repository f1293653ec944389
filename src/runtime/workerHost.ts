import type { WorkerSetup } from './workerTasks.js';
import type { FromWorker, ToWorker, WireError } from './workerProtocol.js';

/**
 * What a job worker is given when it is spawned: its setup, and its ends of the channels to every other worker
 * (`outgoing[j]` sends to worker j, `incoming[j]` receives from it; undefined at its own index). The ports are the
 * host's own (Node's or the browser's `MessagePort`), transferred to the worker.
 */
export interface WorkerStart {
  readonly setup: WorkerSetup;
  readonly outgoing: readonly unknown[];
  readonly incoming: readonly unknown[];
}

/** What the main thread hears of one worker. */
export interface WorkerEvents {
  message(message: FromWorker): void;
  /** An uncaught error in the worker (in the browser also a worker script that failed to load). */
  error(error: WireError): void;
  /** The worker exited on its own (Node only: a browser worker cannot be observed exiting). */
  exit(code: number): void;
}

/** The main thread's handle on one worker. */
export interface HostedWorker {
  /** A protocol message to the worker; `transfer` lists buffers moved with it instead of copied. */
  post(message: ToWorker, transfer?: readonly ArrayBuffer[]): void;
  /** Ends the worker; settles once it is gone (Node: once it exited; the browser ends it at once). */
  terminate(): Promise<void>;
}

/**
 * The platform under a job run on workers (`WorkerAttempt`): Node's `worker_threads` or the browser's module Web
 * Workers. Everything else — the protocol state machine, the coordinator and the storage bridge — is the same on both.
 * @example
 * const host: WorkerHost = {
 *   channel: () => { const { port1, port2 } = new MessageChannel(); return [port1, port2]; },
 *   spawn: (w, start, events) => { ... },
 * };
 */
export interface WorkerHost {
  /** A new channel: the sending end and the receiving end, both transferable to a worker. */
  channel(): [unknown, unknown];
  /** Spawns worker `index` with its start, transferring its ports; `events` hears it from then on. */
  spawn(index: number, start: WorkerStart, events: WorkerEvents): HostedWorker;
  /** Writes a protocol trace line (`WEIR_WORKER_TRACE=1` in Node), when the host traces. */
  readonly trace?: (line: string) => void;
}
