// Job fixtures that run in Node and in the browser alike: no node: imports here (those go in fixtures.ts).
import { asyncScheduler, type SchedulerAction, type SchedulerLike } from 'rxjs';
import { expect } from 'vitest';
import { collect, createJob, fromAsyncIterable, keyBy, map, reduce, type CheckpointStorage, type Collector, type Flow, type JobOptions, type Source } from 'weir';
import { deferred } from '../support/deferred';

export interface Reading {
  key: string;
  n: number;
}

/** 100 readings over 5 keys; `n` is the reading's index, so per-key sums tell double counting apart. */
export const readings: Reading[] = Array.from({ length: 100 }, (_, n) => ({ key: `k${n % 5}`, n }));

/** What the `sums` pipeline emits for `readings` when nothing fails: the rolling sum per key, one per reading. */
export const expectedSums: Reading[] = (() => {
  const totals = new Map<string, number>();
  return readings.map(({ key, n }) => {
    const total = (totals.get(key) ?? 0) + n;
    totals.set(key, total);
    return { key, n: total };
  });
})();

/** Records are read in chunks of this size; pause points are multiples of it, so no record waits in a chunk. */
export const CHUNK = 10;

/**
 * A replayable source over `records` that stops before each index of `pauseAt` until released: `reached(i)` resolves
 * once every record before `i` has been handed to the job. Released pauses stay open for later runs (restores).
 */
export function pausableSource<T>(records: readonly T[], pauseAt: readonly number[]) {
  const gates = new Map(pauseAt.map((i) => [i, deferred()]));
  const arrivals = new Map(pauseAt.map((i) => [i, deferred()]));
  const source: Source<T> = fromAsyncIterable<T>({
    async *[Symbol.asyncIterator]() {
      for (let i = 0; i < records.length; i++) {
        const gate = gates.get(i);
        if (gate) {
          arrivals.get(i)!.resolve();
          await gate.promise;
        }
        yield records[i]!;
      }
    },
  });
  return {
    source,
    reached: (i: number) => arrivals.get(i)!.promise,
    release: (i: number) => gates.get(i)!.resolve(),
    releaseAll: () => gates.forEach((gate) => gate.resolve()),
  };
}

/**
 * The job most checkpoint tests run: `source 'in' → keyBy(key) → reduce sum 'sum' → collect 'out'`, with `between`
 * (a map, say) applied before keyBy.
 */
export function sumsJob(
  options: Omit<JobOptions, 'name'> & { name?: string },
  source: Source<Reading>,
  out: Collector<Reading> = collect<Reading>(),
  between: (flow: Flow<Reading>) => Flow<Reading> = (flow) => flow,
) {
  const job = createJob({ chunkSize: CHUNK, ...options, name: options.name ?? 'sums' });
  between(job.source(source, { uid: 'in' })).pipe(
    keyBy((r) => r.key),
    reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
    out.sink({ uid: 'out' }),
  );
  return { job, out };
}

/** Delays at least this long never come due in these tests (the checkpoint timeout, 10 minutes by default). */
const NEVER = 10 * 60_000;

/**
 * A scheduler that runs delayed work at once (on the next macrotask) and records the delays asked for: restart
 * delays of minutes run in no time, and tests can check which delays a strategy chose. Work delayed by `NEVER` or
 * more (checkpoint timeouts) is recorded but never runs.
 */
export function skippingScheduler(): SchedulerLike & { delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    now: () => asyncScheduler.now(),
    schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T) {
      if (delay >= NEVER) return asyncScheduler.schedule(() => undefined, NEVER);
      delays.push(delay);
      return asyncScheduler.schedule(work, 0, state);
    },
  };
}

/**
 * What a job fails with when a user function of operator `uid` threw `cause`: a UserFunctionError naming the
 * operator and the job, with the thrown error as its cause.
 */
export function userFunctionError(uid: string, cause: unknown, job = 'sums') {
  return expect.objectContaining({ name: 'UserFunctionError', uid, job, cause, message: expect.stringContaining(`operator '${uid}'`) });
}

/** A map that counts the readings it sees by index and throws on reading `at` while `shouldThrow()` says so. */
export function failingAt(at: number, shouldThrow: () => boolean, error: Error) {
  const seen = new Map<number, number>();
  let throws = 0;
  const between = (flow: Flow<Reading>) =>
    flow.pipe(
      map((r: Reading) => {
        seen.set(r.n, (seen.get(r.n) ?? 0) + 1);
        if (r.n === at && shouldThrow()) {
          throws++;
          throw error;
        }
        return r;
      }),
    );
  return { between, seen, throws: () => throws };
}

/**
 * The restart scenario both projects run against their storages: `sumsJob` checkpointed after reading 50, failing
 * once at reading 70 and restarted by a fixed-delay strategy, collects every output exactly once: readings before the
 * checkpoint are not read again, those after it are replayed once. Returns the scheduler, whose delays tell which
 * restart delay was asked for.
 */
export async function restartFromLatestCheckpoint(storage: CheckpointStorage, delay: number) {
  const scheduler = skippingScheduler();
  let failures = 0;
  const failing = failingAt(70, () => failures++ === 0, new Error('flaky'));
  const paused = pausableSource(readings, [50]);
  const { job, out } = sumsJob(
    { scheduler, checkpoints: { storage }, restart: { strategy: 'fixed-delay', attempts: 3, delay } },
    paused.source,
    undefined,
    failing.between,
  );
  const running = job.start();
  await paused.reached(50);
  await running.checkpoint();
  paused.release(50);

  const result = await running.done;
  expect(result.restarts).toBe(1);
  expect(out.values).toEqual(expectedSums);
  expect(failing.seen.get(10)).toBe(1);
  expect(failing.seen.get(60)).toBe(2);
  return { scheduler };
}
