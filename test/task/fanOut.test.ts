// A flow read by several operators (a fan-out) hands each element to every consumer, in the order they were
// declared, and a failure in one branch stops every branch at that record: the same contract RxJS's share() gave.
import { map as rxMap, take } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { UserFunctionError, assignTimestamps, collect, connect, coProcess, createJob, filter, forEach, fromArray, keyBy, map, uncheckpointed, union } from 'weir';

describe('a fan-out', () => {
  it('gives every branch each record once, branch by branch in declaration order, records in order', async () => {
    const job = createJob({ name: 'fan-out-order' });
    const seen: string[] = [];
    const numbers = job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(map((n: number) => n * 10));
    numbers.pipe(forEach((n) => seen.push(`a${n}`), { uid: 'a' }));
    numbers.pipe(filter((n: number) => n !== 20), forEach((n) => seen.push(`b${n}`), { uid: 'b' }));
    numbers.pipe(forEach((n) => seen.push(`c${n}`), { uid: 'c' }));
    await job.start().done;
    expect(seen).toEqual(['a10', 'b10', 'c10', 'a20', 'c20', 'a30', 'b30', 'c30']);
  });

  it('stops every branch at the record whose function threw in one of them, and fails the job naming it', async () => {
    const job = createJob({ name: 'fan-out-failure' });
    const first: number[] = [];
    const second: number[] = [];
    const numbers = job.source(fromArray([1, 2, 3, 4]), { uid: 'in' });
    numbers.pipe(
      map((n: number) => {
        if (n === 3) throw new Error('three');
        return n;
      }, { uid: 'throws-on-3' }),
      forEach((n) => first.push(n)),
    );
    numbers.pipe(forEach((n) => second.push(n)));
    const error = await job.start().done.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(UserFunctionError);
    expect((error as UserFunctionError).uid).toBe('throws-on-3');
    expect(first).toEqual([1, 2]);
    expect(second).toEqual([1, 2]);
  });

  it('fans out the output of an operator with several inputs, with its watermarks and checkpoints', async () => {
    const job = createJob({ name: 'fan-out-of-union', checkpoints: {} });
    const evens = collect<number>();
    const all = collect<number>();
    const source = job.source(fromArray([1, 2, 3, 4, 5, 6]), { uid: 'in' }).pipe(assignTimestamps((n: number) => n, { interval: 0 }));
    const merged = union(source.pipe(filter((n: number) => n % 2 === 0)), source.pipe(filter((n: number) => n % 2 === 1)));
    merged.pipe(filter((n: number) => n % 2 === 0), evens.sink({ uid: 'evens' }));
    merged.pipe(all.sink({ uid: 'all' }));
    const result = await job.start().done;
    expect(evens.values).toEqual([2, 4, 6]);
    expect(all.values).toEqual([1, 2, 3, 4, 5, 6]);
    expect(result.checkpoints.map((c) => c.final)).toEqual([true]);
  });

  it('hands records to branches that begin with RxJS operators, and goes on with the others after one of them ends', async () => {
    const job = createJob({ name: 'fan-out-rxjs' });
    const firstTwo = collect<number>();
    const doubled = collect<number>();
    const all = collect<number>();
    const numbers = job.source(fromArray([1, 2, 3, 4, 5]), { uid: 'in' }).pipe(map((n: number) => n));
    numbers.pipe(uncheckpointed(take(2)), firstTwo.sink({ uid: 'first-two' }));
    numbers.pipe(rxMap((n: number) => n * 2), doubled.sink({ uid: 'doubled' }));
    numbers.pipe(all.sink({ uid: 'all' }));
    await job.start().done;
    expect(firstTwo.values).toEqual([1, 2]);
    expect(doubled.values).toEqual([2, 4, 6, 8, 10]);
    expect(all.values).toEqual([1, 2, 3, 4, 5]);
  });

  it('feeds both inputs of a keyed two-input operator from one source', async () => {
    const job = createJob({ name: 'fan-out-into-connect' });
    const out = collect<string>();
    const words = job.source(fromArray(['ant', 'Bee', 'cat', 'Dog']), { uid: 'in' });
    const upper = words.pipe(filter((w: string) => w[0] === w[0]!.toUpperCase()), keyBy((w: string) => w.toLowerCase()));
    const lower = words.pipe(filter((w: string) => w[0] !== w[0]!.toUpperCase()), keyBy((w: string) => w));
    connect(upper, lower).pipe(
      coProcess<string, string, string>({ onElement1: (w, _ctx, o) => o.emit(`1:${w}`), onElement2: (w, _ctx, o) => o.emit(`2:${w}`) }, { uid: 'both' }),
      out.sink({ uid: 'out' }),
    );
    await job.start().done;
    expect(out.values).toEqual(['2:ant', '1:Bee', '2:cat', '1:Dog']);
  });
});
