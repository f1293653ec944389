// RxJS's own operators inside weir pipelines: records go through them as in RxJS, barriers, watermarks and the end
// of input around them, and state after them stays exactly-once across a checkpoint and a restore.
import { catchError, delay, filter as rxFilter, map as rxMap, mergeMap, of, reduce as rxReduce, retry, take, throwError, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import {
  AsynchronousOperatorError,
  JobDefinitionError,
  UserFunctionError,
  collect,
  createJob,
  fromArray,
  keyBy,
  map,
  memoryCheckpointStorage,
  reduce,
  sinkTo,
  tumbling,
  uncheckpointed,
  window,
  type Flow,
} from 'weir';
import { barrier, harness, marbles, record, watermark } from 'weir/testing';

interface Click {
  user: string;
  ms: number;
}
const click = (user: string, ms: number): Click => ({ user, ms });
const total = (a: Click, b: Click): Click => ({ user: a.user, ms: a.ms + b.ms });
const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** Runs `fromArray(records) → build → collect` as a fresh job and returns what was collected. */
async function run<T, R>(records: T[], build: (flow: Flow<T>) => Flow<R>): Promise<R[]> {
  const job = createJob({ name: 'rxjs-operators' });
  const out = collect<R>();
  build(job.source(fromArray(records), { uid: 'in' })).pipe(out.sink());
  await job.start().done;
  return [...out.values];
}

/** A transactional sink noting, by checkpoint id, the records each checkpoint covers (what it pre-commits at the barrier). */
function preCommitting(covered: Map<number, unknown[]>, uid: string) {
  return sinkTo<unknown>(
    {
      name: 'pre-committing',
      open: () => {
        let written: unknown[] = [];
        return {
          write: (value) => void written.push(value),
          snapshot(id) {
            covered.set(id, [...(covered.get(id) ?? []), ...written]);
            written = [];
            return null;
          },
          finish: () => undefined,
          abort: () => undefined,
        };
      },
    },
    { uid },
  );
}

describe('RxJS operators in a weir pipeline', () => {
  it('runs rxjs map, filter and mergeMap before keyBy, mixed with weir operators', async () => {
    const out = await run([click('ann', 10), click('bob', 0), click('ann', 5)], (clicks) =>
      clicks.pipe(
        rxFilter((c) => c.ms > 0),
        mergeMap((c) => of(c, click(c.user, 1))),
        rxMap((c) => ({ ...c, ms: c.ms * 2 })),
        keyBy((c) => c.user),
        reduce(total, { uid: 'per-user' }),
        map((c) => `${c.user}:${c.ms}`),
      ),
    );
    expect(out).toEqual(['ann:20', 'ann:22', 'ann:32', 'ann:34']);
  });

  it('runs rxjs operators after a keyed operator; the result is a plain flow that needs keyBy again', async () => {
    const out = await run([click('ann', 1), click('bob', 2), click('ann', 3)], (clicks) =>
      clicks.pipe(
        keyBy((c) => c.user),
        reduce(total, { uid: 'per-user' }),
        rxMap((c) => ({ user: c.user.toUpperCase(), ms: c.ms })),
        keyBy((c) => c.user),
        reduce(total, { uid: 'upper' }),
      ),
    );
    expect(out).toEqual([click('ANN', 1), click('BOB', 2), click('ANN', 5)]);
    const job = createJob({ name: 'keyed-after-rxjs' });
    const keyed = job.source(fromArray([click('ann', 1)]), { uid: 'in' }).pipe(
      keyBy((c) => c.user),
      rxMap((c) => c),
    );
    expect(() => keyed.pipe(reduce(total, { uid: 'sum' }))).toThrow(JobDefinitionError);
  });

  it('refuses an RxJS operator right after window(): a window function comes first', async () => {
    const job = createJob({ name: 'windowed' });
    const windowed = job.source(fromArray([click('ann', 1)]), { uid: 'in' }).pipe(keyBy((c) => c.user), window(tumbling(10, { time: 'processing-time' })));
    expect(() => windowed.pipe(rxMap((c) => c) as never)).toThrow(/cannot read a windowed flow; apply a window function/);
  });

  it('keeps keyed state after rxjs operators exactly-once across a checkpoint and a restore', async () => {
    const fragment = (input: Flow<Click>) =>
      input.pipe(
        mergeMap((c) => of(c, c)),
        rxMap((c) => ({ user: c.user, ms: 1 })),
        keyBy((c) => c.user),
        reduce(total, { uid: 'count' }),
        rxMap((c) => c.ms),
      );
    const h = await harness(fragment);
    h.push(click('ann', 7));
    h.push(click('ann', 8));
    const snapshot = await h.snapshot();
    h.push(click('ann', 9)); // after the checkpoint: replayed after the restore
    const restored = await h.restore(snapshot);
    expect(restored.state('count', 'reduce', 'ann')).toEqual(click('ann', 4));
    restored.push(click('ann', 9));
    restored.push(click('ann', 10));
    expect(restored.values()).toEqual([5, 6, 7, 8]);
  });

  it('runs each reader of a flow that ends in rxjs operators with segments of its own', async () => {
    const job = createJob({ name: 'fan-out' });
    const doubled = job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(rxMap((n) => n * 2));
    const evens = collect<number>();
    const labels = collect<string>();
    doubled.pipe(rxFilter((n) => n > 2), evens.sink({ uid: 'evens' }));
    doubled.pipe(rxMap((n) => `#${n}`), labels.sink({ uid: 'labels' }));
    await job.start().done;
    expect(evens.values).toEqual([4, 6]);
    expect(labels.values).toEqual(['#2', '#4', '#6']);
  });

  it('forwards a barrier right after what the rxjs operators emitted for the records before it', async () => {
    const twice = (input: Flow<string>) => input.pipe(mergeMap((s) => of(`${s}1`, `${s}2`)));
    await marbles(testScheduler(), twice, ({ cold, expectOutput, expectCompleted }) => {
      const input = cold('a---B---b', { a: 'a', b: 'b', B: barrier(1) });
      expectOutput(input, { barriers: true }).toBe('(xy)B---(zw)', { x: record('a1'), y: record('a2'), B: barrier(1), z: record('b1'), w: record('b2') });
      expectCompleted([1]);
    });
  });

  it('gives what an rxjs operator emits the timestamp of the record it came from; watermarks go around it', async () => {
    const h = await harness((input: Flow<number>) => input.pipe(mergeMap((n) => of(n, n * 10))));
    h.push(1, 100);
    h.pushWatermark(150);
    h.push(2, 200);
    expect(h.output({ watermarks: true })).toEqual([record(1, 100), record(10, 100), watermark(150), record(2, 200), record(20, 200)]);
  });

  it('lets barriers, watermarks and the end of input go on after take(n) completed', async () => {
    const h = await harness((input: Flow<number>) => input.pipe(uncheckpointed(take(2))));
    [1, 2, 3, 4].forEach((n, i) => h.push(n, i));
    h.pushWatermark(10);
    const snapshot = await h.snapshot();
    expect(snapshot.id).toBe(1);
    expect(h.output({ watermarks: true })).toEqual([record(1, 0), record(2, 1), watermark(10)]);
    const job = createJob({ name: 'take', checkpoints: { storage: memoryCheckpointStorage(), interval: 60_000 } });
    const out = collect<number>();
    job.source(fromArray([1, 2, 3, 4, 5]), { uid: 'in' }).pipe(uncheckpointed(take(2)), out.sink());
    const result = await job.start().done;
    expect(out.values).toEqual([1, 2]);
    expect(result.status).toBe('finished');
  });

  it('hands the records after a retry to the new subscription, as a Subject would (the failed record is gone)', async () => {
    const out = await run([1, 2, 3, 4], (numbers) =>
      numbers.pipe(
        rxMap((n) => {
          if (n === 2) throw new RangeError(`no ${n}`);
          return n * 10;
        }),
        retry(),
        rxFilter((n) => n !== 30),
      ),
    );
    expect(out).toEqual([10, 40]);
  });

  it('completes the rxjs operators at the end of input, so that rxjs reduce and toArray emit before the final checkpoint', async () => {
    const job = createJob({ name: 'to-array', checkpoints: { storage: memoryCheckpointStorage(), interval: 60_000 } });
    const covered = new Map<number, unknown[]>();
    const numbers = job.source(fromArray([3, 1, 2]), { uid: 'in' });
    numbers.pipe(uncheckpointed(toArray()), preCommitting(covered, 'all'));
    numbers.pipe(uncheckpointed(rxReduce((sum: number, n: number) => sum + n, 0)), preCommitting(covered, 'sum'));
    const result = await job.start().done;
    const final = result.checkpoints.at(-1)!;
    expect(final.final).toBe(true);
    expect(covered.get(final.id)).toEqual(expect.arrayContaining([[3, 1, 2], 6]));
    expect(covered.get(final.id)).toHaveLength(2);
  });

  it('lets catchError see an error thrown by an rxjs map before it in the same segment', async () => {
    const seen: string[] = [];
    const out = await run([1, 2, 3], (numbers) =>
      numbers.pipe(
        rxMap((n) => {
          if (n === 3) throw new RangeError(`too big: ${n}`);
          return n;
        }),
        catchError((error: Error) => {
          seen.push(error.message);
          return of(-1);
        }),
      ),
    );
    expect(out).toEqual([1, 2, -1]);
    // Once by the segment, once by the development-mode check's fresh instance, which runs the functions again.
    expect(seen).toEqual(['too big: 3', 'too big: 3']);
  });

  it('fails the attempt with a UserFunctionError naming the segment when an rxjs operator errors', async () => {
    const boom = new TypeError('bad record');
    const job = createJob({ name: 'rxjs-fails' });
    const out = collect<number>();
    job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(
      rxMap((n) => {
        if (n === 2) throw boom;
        return n;
      }),
      out.sink(),
    );
    const error = await job.start().done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserFunctionError);
    expect(error).toMatchObject({ uid: 'rxjs-1', job: 'rxjs-fails', cause: boom });
    expect(String(error)).toContain("operator 'rxjs-1' (rxjs) of job 'rxjs-fails' failed: TypeError: bad record");
    expect(out.values).toEqual([]); // nothing of the failed attempt commits
    const emitted = createJob({ name: 'rxjs-emits-error' });
    emitted.source(fromArray([1]), { uid: 'in' }).pipe(mergeMap(() => throwError(() => boom)), collect().sink());
    await expect(emitted.start().done).rejects.toMatchObject({ name: 'UserFunctionError', cause: boom });
  });

  it('refuses an rxjs operator that emits later (a promise) with AsynchronousOperatorError, without restarts', async () => {
    const job = createJob({
      name: 'promises',
      checkpoints: { storage: memoryCheckpointStorage(), interval: 60_000 },
      restart: { strategy: 'fixed-delay', attempts: 3, delay: 0 },
    });
    const out = collect<number>();
    job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(
      mergeMap((n) => Promise.resolve(n * 2)),
      out.sink(),
    );
    const running = job.start();
    const error = await running.done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AsynchronousOperatorError);
    expect(error).toBeInstanceOf(JobDefinitionError);
    expect(String(error)).toMatch(/operator 'rxjs-1' \(rxjs\) of job 'promises' emitted a record after the record it came from was handled/);
    expect(String(error)).toMatch(/mapAsync for promises, window\(…\) for buffering by time, process with timers/);
    expect(running.restarts).toBe(0);
    expect(out.values).toEqual([]);
  });

  it('refuses delay on virtual time before the delayed record reaches downstream', async () => {
    const scheduler = testScheduler();
    const delayed = (input: Flow<number>) => input.pipe(delay(5, scheduler));
    // The delayed record comes out at frame 5 and fails the harness; the next push (frame 10) reports it.
    await expect(
      marbles(scheduler, delayed, ({ cold, expectOutput }) => {
        expectOutput(cold('a 9ms b|', { a: 1, b: 2 })).toBe('10ms #', {}, expect.any(AsynchronousOperatorError));
      }),
    ).rejects.toThrow(AsynchronousOperatorError);
  });
});
