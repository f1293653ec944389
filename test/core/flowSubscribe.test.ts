// A flow subscribed like an Observable leaves weir, as `asObservable()` does: records as the job emits them, the end
// of the job as completion, a failure for good as an error; `from(flow)` is RxJS's interop with it.
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { JobDefinitionError, UserFunctionError, createJob, fromArray, keyBy, map, reduce } from 'weir';

describe('subscribing to a flow', () => {
  it('hands the records to the observer and completes when the job ends', async () => {
    const job = createJob({ name: 'subscribe' });
    const sums = job.source(fromArray([1, 2, 3, 4]), { uid: 'numbers' }).pipe(keyBy((n) => n % 2), reduce((a: number, b: number) => a + b, { uid: 'sum' }));
    const seen: number[] = [];
    let completed = false;
    sums.subscribe({ next: (n) => seen.push(n), complete: () => (completed = true) });
    await job.start().done;
    expect(seen).toEqual([1, 2, 4, 6]);
    expect(completed).toBe(true);
  });

  it('is an interop Observable for RxJS: from(flow) with RxJS operators', async () => {
    const job = createJob({ name: 'subscribe-from' });
    const doubled = job.source(fromArray(['a', 'bb', 'ccc']), { uid: 'words' }).pipe(map((w) => w.length * 2));
    const all = lastValueFrom(from(doubled).pipe(toArray()));
    await job.start().done;
    expect(await all).toEqual([2, 4, 6]);
  });

  it('gives each subscription a sink of its own', async () => {
    const job = createJob({ name: 'subscribe-twice' });
    const words = job.source(fromArray(['x', 'y']), { uid: 'words' });
    const first: string[] = [];
    const second: string[] = [];
    words.subscribe((w) => first.push(w));
    words.subscribe((w) => second.push(w.toUpperCase()));
    await job.start().done;
    expect([first, second]).toEqual([['x', 'y'], ['X', 'Y']]);
  });

  it('errors when the job fails for good', async () => {
    const job = createJob({ name: 'subscribe-fails', restart: { strategy: 'none' } });
    const failing = job.source(fromArray([1, 2]), { uid: 'numbers' }).pipe(map((n: number) => {
      if (n === 2) throw new Error('two is not allowed');
      return n;
    }, { uid: 'guard' }));
    const errors: unknown[] = [];
    failing.subscribe({ error: (error) => errors.push(error) });
    await job.start().done.catch(() => undefined);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(UserFunctionError);
    expect(String(errors[0])).toMatch(/guard/);
  });

  it('refuses a subscription once the job has started: its graph is fixed', async () => {
    const job = createJob({ name: 'subscribe-late' });
    const words = job.source(fromArray(['x']), { uid: 'words' });
    words.subscribe(() => undefined);
    const running = job.start();
    expect(() => words.subscribe(() => undefined)).toThrow(JobDefinitionError);
    expect(() => words.subscribe(() => undefined)).toThrow(/has started; its graph cannot change/);
    await running.done;
  });
});
