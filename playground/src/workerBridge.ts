import type { GeneratorControl } from './generator';
import type { HarnessHooks } from './harness';

/**
 * The playground's link between the page and the job workers of a run on Web Workers, over a BroadcastChannel of
 * the run's own (every worker of every attempt hears the page, and the page hears them, without wiring ports).
 * The engine's protocol does not carry these: they are the playground's controls (rate, Crash) and views (output,
 * records read, user errors), which the one-thread playground reads off shared objects.
 */

/** What a playground job worker is started with, in its name: the editor's code, compiled again in the worker. */
export interface WorkerInit {
  code: string;
  jobName: string;
  rate: number;
  channel: string;
}

type ToPage =
  | { t: 'output'; record: unknown }
  | { t: 'control'; from: string; offset: number; opened: number[]; paused: boolean }
  | { t: 'userError'; name: string; message: string; stack: string | undefined };
type ToWorkers = { t: 'rate'; rate: number } | { t: 'crash' };

export interface PageBridge {
  readonly channel: string;
  crash(): void;
  rate(rate: number): void;
  close(): void;
}

/** The page's side: mirrors the workers' source progress into `control`, their output and user errors into the hooks. */
export function pageBridge(control: GeneratorControl, hooks: HarnessHooks, onUserError: (error: unknown) => void): PageBridge {
  const channel = `weir-playground-run-${crypto.randomUUID()}`;
  const port = new BroadcastChannel(channel);
  // Each attempt's source reader lives in a new worker: the attempts' opened offsets, in the order they appeared.
  const opened = new Map<string, number[]>();
  port.onmessage = ({ data }: MessageEvent<ToPage>) => {
    if (data.t === 'output') hooks.onOutput(data.record);
    else if (data.t === 'control') {
      opened.set(data.from, data.opened);
      control.offset = data.offset;
      control.paused = data.paused;
      control.opened = [...opened.values()].flat();
    } else {
      const error = new Error(data.message);
      error.name = data.name;
      if (data.stack !== undefined) error.stack = data.stack;
      onUserError(error);
    }
  };
  const send = (message: ToWorkers) => port.postMessage(message);
  return { channel, crash: () => send({ t: 'crash' }), rate: (rate) => send({ t: 'rate', rate }), close: () => port.close() };
}

/** A worker's side: the control its source reads, hooks that reach the page, and what the page asks of it. */
export function workerBridge(init: WorkerInit, arm: () => void) {
  const port = new BroadcastChannel(init.channel);
  const from = crypto.randomUUID();
  const control: GeneratorControl = { rate: init.rate, offset: 0, paused: false, opened: [] };
  const post = (message: ToPage) => port.postMessage(message);
  port.onmessage = ({ data }: MessageEvent<ToWorkers>) => {
    if (data.t === 'rate') control.rate = data.rate;
    else arm();
  };
  // Only the worker that runs the source has progress to tell.
  setInterval(() => {
    if (control.opened.length > 0) post({ t: 'control', from, offset: control.offset, opened: control.opened, paused: control.paused });
  }, 200);
  const hooks: HarnessHooks = {
    onOutput: (record) => {
      try {
        post({ t: 'output', record });
      } catch {
        post({ t: 'output', record: String(record) });
      }
    },
  };
  const onUserError = (error: unknown) =>
    post({ t: 'userError', name: (error as Error)?.name ?? 'Error', message: (error as Error)?.message ?? String(error), stack: (error as Error)?.stack });
  return { control, hooks, onUserError };
}
