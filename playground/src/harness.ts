import * as weir from 'weir/browser';
import type { CheckpointStorage, Flow, RunningJob, StartOptions } from 'weir/browser';
import { eventAt, generatedSource, type GeneratorControl, type PlaygroundEvent } from './generator';
import { pageBridge, type PageBridge, type WorkerInit } from './workerBridge';

/**
 * Runs user code as a job: the code is the body of `new Function('weir', 'ctx', code)`, given the weir module
 * (with user callbacks wrapped so that their errors can be shown with their line) and the playground context.
 */

export const SOURCE_URL = 'playground-job.js';

/** A user-code error with the line (1-based, in the editor) it came from, when known. */
export class UserCodeError extends Error {
  constructor(message: string, readonly line: number | undefined, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** How many lines the engine puts before a `new Function` body, measured once (2 in V8). */
const FUNCTION_PREAMBLE_LINES = (() => {
  try {
    new Function('a', 'b', `throw new Error('probe')\n//# sourceURL=probe.js`)();
  } catch (error) {
    const match = /probe\.js:(\d+)/.exec(String((error as Error).stack));
    if (match) return Number(match[1]) - 1;
  }
  return 2;
})();

/** The editor line an error was thrown from, read off its stack. */
export function lineOf(error: unknown): number | undefined {
  const match = new RegExp(`${SOURCE_URL.replace('.', '\\.')}:(\\d+):\\d+`).exec(String((error as Error)?.stack ?? ''));
  return match ? Number(match[1]) - FUNCTION_PREAMBLE_LINES : undefined;
}

export interface Verification {
  state: string;
  perRecord: (event: PlaygroundEvent) => number;
}

export interface HarnessHooks {
  onOutput(record: unknown): void;
}

export interface PlaygroundRun {
  readonly running: RunningJob;
  readonly control: GeneratorControl;
  readonly verification: Verification | undefined;
  /** Failures of user functions seen while the job runs (the first one is shown). */
  readonly userErrors: unknown[];
  /** 0: on the page's thread; else the number of module Web Workers the job runs on. */
  readonly workers: number;
  /** The job as the page built it (its graph says which operators are keyed). */
  readonly job: weir.Job;
  /** Crashes injected with the Crash button in this run. */
  crashes: number;
  /** Makes the next record throw inside the job, once. */
  crash(): void;
  /** Changes the input rate while the job runs (in the workers too). */
  setRate(rate: number): void;
}

/** What the playground builds a job from: the same in the page and in every job worker. */
export interface RunDefinition {
  code: string;
  jobName: string;
  storage: CheckpointStorage;
  control: GeneratorControl;
  hooks: HarnessHooks;
  /** Hears each failure of a user function as it is recorded (a job worker forwards them to the page). */
  onUserError?: (error: unknown) => void;
}

/** A job built from user code, with the parts of the harness the page (or a worker's bridge) drives. */
export interface BuiltRun {
  readonly job: weir.Job;
  readonly verification: Verification | undefined;
  readonly userErrors: unknown[];
  /** Makes the next record throw inside the job, once. */
  arm(): void;
}

/**
 * Builds (does not start) a job from user code. Throws a `UserCodeError` when the code does not compile or throws
 * while building the dataflow graph.
 */
export function buildRun({ code, jobName, storage, control, hooks, onUserError }: RunDefinition): BuiltRun {
  const userErrors: unknown[] = [];
  let crashArmed = false;
  let outputs = 0;
  let input: Flow<PlaygroundEvent> | undefined;
  let verification: Verification | undefined;
  const job = weir.createJob({
    name: jobName,
    checkpoints: { storage, interval: 1_000, retain: 5 },
    // Generous attempts: the Crash button restarts the job; a failing user function stops it (see userErrors).
    restart: { strategy: 'fixed-delay', attempts: 1_000, delay: 300 },
    chunkSize: 256,
    onWarning: (message) => console.warn(`[weir] ${message}`),
  });
  const ctx = {
    job,
    /** The generated events; one source, however often it is asked for (a flow can feed several operators). */
    input(): Flow<PlaygroundEvent> {
      input ??= job.source(generatedSource(control), { uid: 'events' }).pipe(
        weir.map((event: PlaygroundEvent) => {
          if (crashArmed) {
            crashArmed = false;
            throw new Error(`Crash button: a failure inside the job at record #${event.seq}`);
          }
          return event;
        }),
      );
      return input;
    },
    output() {
      outputs++;
      return weir.forEach((record: unknown) => hooks.onOutput(record), { uid: outputs === 1 ? 'playground-output' : `playground-output-${outputs}` });
    },
    verify(v: Verification) {
      if (typeof v?.state !== 'string' || typeof v.perRecord !== 'function') throw new TypeError('ctx.verify takes { state: string, perRecord: (event) => number }');
      verification = v;
    },
    eventAt,
  };

  let body: (w: unknown, c: unknown) => void;
  try {
    body = new Function('weir', 'ctx', `${code}\n//# sourceURL=${SOURCE_URL}`) as typeof body;
  } catch (error) {
    throw new UserCodeError(`${(error as Error).name}: ${(error as Error).message}`, undefined, { cause: error });
  }
  try {
    body(
      wrapModule((error) => {
        userErrors.push(error);
        onUserError?.(error);
      }),
      ctx,
    );
  } catch (error) {
    throw new UserCodeError(`${(error as Error).name}: ${(error as Error).message}`, lineOf(error), { cause: error });
  }
  return {
    job,
    get verification() {
      return verification;
    },
    userErrors,
    arm: () => (crashArmed = true),
  };
}

/**
 * Builds and starts a job from user code, on the page's thread (`workers: 0`) or on that many module Web Workers
 * (see jobWorker.ts and workerBridge.ts). Throws a `UserCodeError` when the code does not compile or throws while
 * building the dataflow graph.
 */
export function startRun(options: {
  code: string;
  jobName: string;
  storage: CheckpointStorage;
  rate: number;
  restore: StartOptions['restore'];
  /** Restore even when the checkpoint holds state of operators the code no longer has (that state is dropped). */
  allowNonRestoredState?: boolean;
  /** 0: the job runs on the page's thread; n: on n module Web Workers. */
  workers?: number;
  hooks: HarnessHooks;
}): PlaygroundRun {
  const control: GeneratorControl = { rate: options.rate, offset: 0, paused: false, opened: [] };
  const definition: RunDefinition = { code: options.code, jobName: options.jobName, storage: options.storage, control, hooks: options.hooks };
  const start = { restore: options.restore, allowNonRestoredState: options.allowNonRestoredState };
  const workers = options.workers ?? 0;
  let built!: BuiltRun;
  let running: RunningJob;
  let bridge: PageBridge | undefined;
  if (workers === 0) {
    built = buildRun(definition);
    running = built.job.start(start);
  } else {
    // Built here first, so that a user-code error shows with its line before any worker starts.
    const define = () => (built = buildRun(definition)).job;
    bridge = pageBridge(control, options.hooks, (error) => built.userErrors.push(error));
    const init: WorkerInit = { code: options.code, jobName: options.jobName, rate: options.rate, channel: bridge.channel };
    try {
      running = weir.startJob(define, {
        workers,
        worker: ({ worker }) => new Worker(new URL('./jobWorker.ts', import.meta.url), { type: 'module', name: JSON.stringify({ ...init, worker }) }),
        ...start,
      });
    } catch (error) {
      bridge.close();
      throw error;
    }
    void running.done.finally(() => bridge?.close()).catch(() => undefined);
  }
  return {
    running,
    job: built.job,
    control,
    workers,
    get verification() {
      return built.verification;
    },
    get userErrors() {
      return built.userErrors;
    },
    crashes: 0,
    crash() {
      if (bridge) bridge.crash();
      else built.arm();
      this.crashes++;
    },
    setRate(rate: number) {
      control.rate = rate;
      bridge?.rate(rate);
    },
  };
}

/**
 * The weir module with every function handed to an operator factory (and those in plain option objects, such as
 * `process({ onElement })`) wrapped to record what it throws, then rethrow it: the engine still routes the failure
 * to the restart strategy, and the playground learns it was the user's code, with its stack.
 */
function wrapModule(onError: (error: unknown) => void): typeof weir {
  const wrapFunction = (fn: (...args: unknown[]) => unknown) =>
    function (this: unknown, ...args: unknown[]) {
      try {
        return fn.apply(this, args);
      } catch (error) {
        onError(error);
        throw error;
      }
    };
  const wrapArg = (arg: unknown, depth: number): unknown => {
    if (typeof arg === 'function') return wrapFunction(arg as (...args: unknown[]) => unknown);
    if (depth < 2 && arg !== null && typeof arg === 'object' && Object.getPrototypeOf(arg) === Object.prototype) {
      return Object.fromEntries(Object.entries(arg).map(([key, value]) => [key, wrapArg(value, depth + 1)]));
    }
    return arg;
  };
  const wrapped: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(weir)) {
    // Factories (lower-case functions) get wrapped arguments; classes and constants are passed as they are.
    wrapped[name] =
      typeof value === 'function' && /^[a-z]/.test(name) ? (...args: unknown[]) => (value as (...a: unknown[]) => unknown)(...args.map((a) => wrapArg(a, 0))) : value;
  }
  return wrapped as unknown as typeof weir;
}

/** Running sums of `perRecord` over the generated events, extended as the source moves on. */
export function expectedSums(perRecord: (event: PlaygroundEvent) => number): (offset: number) => number {
  const sums = [0];
  return (offset) => {
    for (let i = sums.length - 1; i < offset; i++) sums.push(sums[i]! + perRecord(eventAt(i)));
    return sums[offset]!;
  };
}
