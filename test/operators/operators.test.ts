import { describe, expect, it } from 'vitest';
import {
  InvalidKeyError,
  JobDefinitionError,
  NoKeyedContextError,
  aggregate,
  collect,
  createJob,
  filter,
  flatMap,
  fold,
  fromArray,
  keyBy,
  listState,
  map,
  outputTag,
  process,
  sideOutput,
  reduce,
  valueState,
  type Flow,
  type Key,
} from 'weir';

interface Click {
  user: string;
  ms: number;
}

const clicks: Click[] = [
  { user: 'ann', ms: 10 },
  { user: 'bob', ms: 5 },
  { user: 'ann', ms: 20 },
  { user: 'cid', ms: 1 },
  { user: 'bob', ms: 7 },
];

/** Runs `fromArray(records) → build → collect` as a fresh job and returns what was collected. */
async function run<T, R>(records: T[], build: (flow: Flow<T>) => Flow<R>): Promise<R[]> {
  const job = createJob({ name: 'operators' });
  const out = collect<R>();
  build(job.source(fromArray(records), { uid: 'in' })).pipe(out.sink());
  await job.start().done;
  return [...out.values];
}

describe('pipe', () => {
  it('types nine operators in one call, as RxJS does (tsc checks the callbacks)', async () => {
    const job = createJob({ name: 'nine' });
    const out = collect<string>();
    job.source(fromArray([1, 2]), { uid: 'in' }).pipe(
      map((n) => n + 1),
      map((n) => n * 2),
      filter((n) => n > 0),
      map((n) => n + 1),
      map((n) => n - 1),
      map((n) => n * 10),
      map((n) => n / 10),
      map((n) => `#${n.toFixed(0)}`),
      out.sink(),
    );
    await job.start().done;
    expect(out.values).toEqual(['#4', '#6']);
  });
});

describe('stateless operators', () => {
  it('map applies a function to every record', async () => {
    expect(await run([1, 2, 3], (f) => f.pipe(map((n) => n * 10)))).toEqual([10, 20, 30]);
  });

  it('filter keeps the records that pass', async () => {
    expect(await run([1, 2, 3, 4], (f) => f.pipe(filter((n) => n % 2 === 0)))).toEqual([2, 4]);
  });

  it('flatMap emits every element of the returned iterable, in order', async () => {
    const words = await run(['a b', '', 'c'], (f) => f.pipe(flatMap((line) => line.split(' ').filter(Boolean))));
    expect(words).toEqual(['a', 'b', 'c']);
  });

  it('chains in pipe', async () => {
    const out = await run([1, 2, 3, 4], (f) =>
      f.pipe(
        filter((n) => n > 1),
        flatMap((n) => [n, n]),
        map((n) => `${n}`),
      ),
    );
    expect(out).toEqual(['2', '2', '3', '3', '4', '4']);
  });
});

describe('keyed operators', () => {
  it('reduce emits the rolling reduction per key, the first record of a key as it is', async () => {
    const out = await run(clicks, (f) =>
      f.pipe(
        keyBy((c) => c.user),
        reduce((a, b) => ({ user: a.user, ms: a.ms + b.ms }), { uid: 'sum' }),
      ),
    );
    expect(out).toEqual([
      { user: 'ann', ms: 10 },
      { user: 'bob', ms: 5 },
      { user: 'ann', ms: 30 },
      { user: 'cid', ms: 1 },
      { user: 'bob', ms: 12 },
    ]);
  });

  it('fold starts every key from its own copy of the seed', async () => {
    const out = await run<Click, { user: string; all: number[] }>(clicks, (f) =>
      f.pipe(
        keyBy((c) => c.user),
        fold({ user: '', all: [] as number[] }, (acc, c) => {
          // Mutating the accumulator in place is allowed: the seed is never shared between keys.
          acc.user = c.user;
          acc.all.push(c.ms);
          return acc;
        }),
        map((acc) => ({ user: acc.user, all: [...acc.all] })),
      ),
    );
    expect(out).toEqual([
      { user: 'ann', all: [10] },
      { user: 'bob', all: [5] },
      { user: 'ann', all: [10, 20] },
      { user: 'cid', all: [1] },
      { user: 'bob', all: [5, 7] },
    ]);
  });

  it('aggregate emits getResult of the key’s accumulator for every record', async () => {
    const out = await run<Click, string>(clicks, (f) =>
      f.pipe(
        keyBy((c) => c.user),
        aggregate({
          createAccumulator: () => ({ sum: 0, n: 0 }),
          add: (c: Click, acc) => ({ sum: acc.sum + c.ms, n: acc.n + 1 }),
          getResult: (acc) => `${acc.sum / acc.n}/${acc.n}`,
          merge: (a, b) => ({ sum: a.sum + b.sum, n: a.n + b.n }),
        }),
      ),
    );
    expect(out).toEqual(['10/1', '5/1', '15/2', '1/1', '6/2']);
  });

  it('process reads and writes keyed state and sees the current key', async () => {
    const seen = listState<number>('seen');
    const count = valueState<number>('count', { default: 0 });
    const out = await run<Click, string>(clicks, (f) =>
      f.pipe(
        keyBy((c) => c.user),
        process<Click, string>({
          onElement(c, ctx, out) {
            const n = ctx.state(count).value()! + 1;
            ctx.state(count).update(n);
            ctx.state(seen).add(c.ms);
            out.emit(`${String(ctx.key)}#${n}:${ctx.state(seen).get().join('+')}`);
          },
        }),
      ),
    );
    expect(out).toEqual(['ann#1:10', 'bob#1:5', 'ann#2:10+20', 'cid#1:1', 'bob#2:5+7']);
  });

  it('process can emit any number of records per input', async () => {
    const out = await run<number, number>([1, 2, 3], (f) =>
      f.pipe(
        process<number, number>({
          onElement(n, ctx, out) {
            expect(ctx.key).toBeUndefined();
            for (let i = 0; i < n; i++) out.emit(n);
          },
        }),
      ),
    );
    expect(out).toEqual([1, 2, 2, 3, 3, 3]);
  });

  it('a side output read right after its operator (one chain) gets its records, and operators in between drop them', async () => {
    const odd = outputTag<string>('odd');
    const split = (f: Flow<number>) =>
      f.pipe(
        process<number, number>({
          onElement(n, _ctx, out) {
            if (n % 2 === 1) out.side(odd, `odd ${n}`);
            else out.emit(n);
          },
        }),
      );
    expect(await run<number, string>([1, 2, 3, 4], (f) => split(f).pipe(sideOutput(odd)))).toEqual(['odd 1', 'odd 3']);
    expect(await run<number, number>([1, 2, 3, 4], (f) => split(f).pipe(map((n: number) => n * 10)))).toEqual([20, 40]);
    expect(await run<number, string>([1, 2, 3, 4], (f) => split(f).pipe(map((n: number) => n * 10), sideOutput(odd)))).toEqual([]);
  });

  it('accepts numbers, booleans and bigints as keys, each its own key', async () => {
    const keys: Key[] = [1, '1', true, 1n, 1, true];
    const out = await run(keys, (f) =>
      f.pipe(
        keyBy((k) => k),
        fold(0, (n) => n + 1),
      ),
    );
    expect(out).toEqual([1, 1, 1, 1, 2, 2]);
  });

  it('fails the job with NoKeyedContextError when process uses state on a flow that is not keyed', async () => {
    const job = createJob({ name: 'unkeyed' });
    job.source(fromArray([1]), { uid: 'in' }).pipe(
      process<number, number>({ onElement: (_n, ctx) => void ctx.state(valueState<number>('v')).value() }, { uid: 'p' }),
      collect<number>().sink(),
    );
    await expect(job.start().done).rejects.toThrow(NoKeyedContextError);
  });

  it.each([
    ['an object', { id: 1 }],
    ['null', null],
    ['NaN', Number.NaN],
  ])('fails the job with InvalidKeyError when keyBy returns %s', async (_what, key) => {
    const job = createJob({ name: 'bad-key' });
    job.source(fromArray([1]), { uid: 'in' }).pipe(
      keyBy(() => key as unknown as Key),
      reduce((a: number, b: number) => a + b, { uid: 'sum' }),
      collect<number>().sink(),
    );
    const done = job.start().done;
    await expect(done).rejects.toThrow(InvalidKeyError);
    await expect(done).rejects.toThrow(/'sum'/);
  });

  it.each([
    ['reduce', reduce((a: number, b: number) => a + b)],
    ['fold', fold(0, (a: number, b: number) => a + b)],
    [
      'aggregate',
      aggregate({ createAccumulator: () => 0, add: (v: number, a: number) => a + v, getResult: (a: number) => a, merge: (a: number, b: number) => a + b }),
    ],
  ])('rejects %s on a flow that is not keyed with JobDefinitionError', (name, operator) => {
    const job = createJob({ name: 'unkeyed' });
    const flow = job.source(fromArray([1]), { uid: 'in' });
    // Deliberately wrong (keyBy is missing): the cast gets past the types, as a JavaScript caller would.
    expect(() => flow.pipe(operator as never)).toThrow(JobDefinitionError);
    expect(() => flow.pipe(operator as never)).toThrow(new RegExp(`${name}.*keyBy`));
  });
});
