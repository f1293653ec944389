import type { VirtualTimeScheduler } from 'rxjs';
import {
  Flow,
  assignTimestamps,
  collect,
  createJob,
  map,
  memoryCheckpointStorage,
  process,
  type CheckpointStorage,
  type Collector,
  type JobOptions,
  type Source,
} from 'weir';
import { deferred } from '../support/deferred';
import { advanceTo } from '../support/virtualTime';

/** A test event: key, event timestamp, value. */
export interface Ev {
  k: string;
  t: number;
  v: number;
}

export const ev = (k: string, t: number, v = 1): Ev => ({ k, t, v });

/** Adds two events' values (the key and timestamp of the first are kept). */
export const sum = (a: Ev, b: Ev): Ev => ({ k: a.k, t: a.t, v: a.v + b.v });

/** Event timestamps from `t`, with a watermark after every record lagging `outOfOrderness` behind the largest. */
export const timestamps = (outOfOrderness = 0) => assignTimestamps<Ev>((e) => e.t, { outOfOrderness, interval: 0 });

/** A record with the event timestamp it carried downstream. */
export interface Stamped<T> {
  value: T;
  ts: number | undefined;
}

/** Pairs every record with its event timestamp (`ctx.timestamp`), so tests see what window results are stamped with. */
export function stamped<T>(): (flow: Flow<T>) => Flow<Stamped<T>> {
  return (flow) => flow.pipe(process<T, Stamped<T>>({ onElement: (value, ctx, out) => out.emit({ value, ts: ctx.timestamp }) }));
}

/** `[key, summed value, result timestamp]` per window result of `stamped()` sums. */
export const triples = (out: unknown[]) => (out as Stamped<Ev>[]).map(({ value, ts }) => [value.k, value.v, ts]);

/** `[key, start, end, values]` per window firing, from a ProcessWindowFunction. */
export type Firing = [string, number, number, number[]];

/** A ProcessWindowFunction that emits each firing as a `Firing`. */
export const listWindows = () =>
  process<Ev, Firing>({
    process: (key, ctx, elements, out) => out.emit([String(key), ctx.window.start, ctx.window.end, elements.map((e) => e.v)]),
  });

/**
 * A replayable source over `records` (offset = index of the next record) that calls `before(i)` before handing out
 * record `i`, and `before(records.length)` before the end of input. `before` may return a promise: the source waits
 * for it, and a checkpoint triggered meanwhile is cut exactly before record `i`.
 */
export function scriptedSource<T>(records: readonly T[], before?: (i: number) => void | Promise<void>): Source<T> {
  return {
    name: `scripted(${records.length})`,
    replayable: true,
    open({ restoredOffset }) {
      let index = typeof restoredOffset === 'number' ? restoredOffset : 0;
      const next = (max: number) => {
        if (index >= records.length) return null;
        const chunk = records.slice(index, index + max);
        index += chunk.length;
        return chunk;
      };
      return {
        read(max) {
          const hook = before?.(index);
          return hook instanceof Promise ? hook.then(() => next(max)) : next(max);
        },
        offset: () => index,
      };
    },
  };
}

/** Gates before record indexes: `reached(i)` resolves when the source waits before record `i`; `release(i)` lets it go. */
export function gates(pauseAt: readonly number[]) {
  const gate = new Map(pauseAt.map((i) => [i, deferred()]));
  const arrival = new Map(pauseAt.map((i) => [i, deferred()]));
  const released = new Set<number>();
  return {
    before(i: number): Promise<void> | undefined {
      if (!gate.has(i) || released.has(i)) return undefined;
      arrival.get(i)!.resolve();
      return gate.get(i)!.promise;
    },
    reached: (i: number) => arrival.get(i)!.promise,
    release(i: number) {
      released.add(i);
      gate.get(i)!.resolve();
    },
  };
}

export type Pipeline<T> = (flow: Flow<T>) => Flow<unknown> | Record<string, Flow<unknown>>;

/** Builds a job `source 'in' → pipeline → one collect sink per output flow`; chunks of one record by default. */
export function buildJob<T>(source: Source<T>, pipeline: Pipeline<T>, options: Partial<JobOptions> = {}) {
  const job = createJob({ chunkSize: 1, ...options, name: options.name ?? 'windows' });
  const built = pipeline(job.source(source, { uid: 'in' }));
  const flows: Record<string, Flow<unknown>> = built instanceof Flow ? { out: built } : built;
  const outs: Record<string, Collector<unknown>> = {};
  for (const [name, flow] of Object.entries(flows)) {
    const out = collect<unknown>();
    flow.pipe(out.sink({ uid: `sink-${name}` }));
    outs[name] = out;
  }
  return { job, outs };
}

type Outputs = Record<string, unknown[]>;

const valuesOf = (outs: Record<string, Collector<unknown>>): Outputs =>
  Object.fromEntries(Object.entries(outs).map(([name, out]) => [name, [...out.values]]));

/** Runs `pipeline` over `records` to the end of input; returns what each output collected (`out` for a single flow). */
export async function run<T>(records: readonly T[], pipeline: Pipeline<T>, options: Partial<JobOptions> = {}): Promise<Outputs> {
  const { job, outs } = buildJob(scriptedSource(records), pipeline, options);
  await job.start().done;
  return valuesOf(outs);
}

/** `run` for a pipeline with one output. */
export async function runOut<T, R = unknown>(records: readonly T[], pipeline: (flow: Flow<T>) => Flow<R>, options: Partial<JobOptions> = {}): Promise<R[]> {
  return (await run(records, pipeline as Pipeline<T>, options)).out as R[];
}

export interface ClockOptions {
  /** A fresh virtual clock per run. */
  clock?: () => VirtualTimeScheduler;
  /** Processing time at which record `i` arrives (`arrivals[records.length]`: the time before the end of input). */
  arrivals?: readonly number[];
}

/** `before` hook that moves the run's virtual clock to each record's arrival time. */
function clockHook(scheduler: VirtualTimeScheduler | undefined, arrivals: readonly number[] | undefined) {
  return (i: number) => {
    if (scheduler && arrivals?.[i] !== undefined) advanceTo(scheduler, arrivals[i]!);
  };
}

/**
 * Runs `pipeline` three ways and returns the outputs: without interruption; checkpointed just before record `at`,
 * cancelled, and continued by a new job restored from that checkpoint (`restore: 'latest'`); and checkpointed before
 * `at` then failing once at record `failAt` (≥ `at`) and restarted by the restart strategy.
 * `job` adds options to every run (a state backend, say).
 */
export async function runThreeWays<T>(
  records: readonly T[],
  pipeline: Pipeline<T>,
  { at, failAt = records.length - 1, clock, arrivals, job = {} }: { at: number; failAt?: number; job?: Partial<JobOptions> } & ClockOptions,
): Promise<{ uninterrupted: Outputs; restored: Outputs; restarted: Outputs }> {
  const start = (p: Pipeline<T>, options: Partial<JobOptions>, pauseAt: number[], from?: VirtualTimeScheduler) => {
    const scheduler = clock?.();
    // A restored job's clock starts where the previous one stopped, as a real clock would.
    if (scheduler && from) advanceTo(scheduler, from.frame);
    const gate = gates(pauseAt);
    const tick = clockHook(scheduler, arrivals);
    const built = buildJob(scriptedSource(records, (i) => (tick(i), gate.before(i))), p, { ...job, ...options, ...(scheduler ? { scheduler } : {}) });
    return { ...built, gate, scheduler };
  };

  const plain = start(pipeline, {}, []);
  await plain.job.start().done;
  const uninterrupted = valuesOf(plain.outs);

  // Checkpoint before `at`, cancel, restore in a new job.
  const storage: CheckpointStorage = memoryCheckpointStorage();
  const one = start(pipeline, { checkpoints: { storage } }, [at]);
  const running = one.job.start();
  await one.gate.reached(at);
  await running.checkpoint();
  await running.cancel();
  const two = start(pipeline, { checkpoints: { storage } }, [], one.scheduler);
  await two.job.start({ restore: 'latest' }).done;
  const before = valuesOf(one.outs);
  const after = valuesOf(two.outs);
  const restored = Object.fromEntries(Object.keys(after).map((name) => [name, [...before[name]!, ...after[name]!]]));

  // Checkpoint before `at`, fail once at `failAt`, restart.
  let failed = false;
  const failing = (flow: Flow<T>) =>
    pipeline(
      flow.pipe(
        map((record: T) => {
          if (!failed && record === records[failAt]) {
            failed = true;
            throw new Error('injected failure');
          }
          return record;
        }),
      ),
    );
  const three = start(failing, { checkpoints: { storage: memoryCheckpointStorage() }, restart: { strategy: 'fixed-delay', attempts: 1, delay: 0 } }, [at]);
  const running3 = three.job.start();
  await three.gate.reached(at);
  await running3.checkpoint();
  three.gate.release(at);
  // The restart delay runs on the job's clock: keep a virtual one turning until the job ends.
  let ended = false;
  const result = running3.done.finally(() => (ended = true));
  if (three.scheduler) {
    while (!ended) {
      advanceTo(three.scheduler, three.scheduler.frame);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  const { restarts } = await result;
  if (!failed || restarts !== 1) throw new Error(`expected one restart after the injected failure, got ${restarts}`);
  return { uninterrupted, restored, restarted: valuesOf(three.outs) };
}
