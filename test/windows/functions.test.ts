import { describe, expect, it } from 'vitest';
import {
  aggregate,
  keyBy,
  outputTag,
  process,
  reduce,
  sideOutput,
  tumbling,
  window,
  type AggregateFunction,
  type Flow,
} from 'weir';
import { ev, run, runOut, sum, timestamps, type Ev } from './fixtures';

const events = [ev('a', 1, 1), ev('b', 2, 10), ev('a', 7, 2), ev('a', 13, 4), ev('b', 25, 20)];
const windowed = (flow: Flow<Ev>) => flow.pipe(timestamps(), keyBy((e: Ev) => e.k), window<Ev>(tumbling(10)));
const mean: AggregateFunction<Ev, { sum: number; n: number }, number> = {
  createAccumulator: () => ({ sum: 0, n: 0 }),
  add: (e, acc) => ({ sum: acc.sum + e.v, n: acc.n + 1 }),
  getResult: (acc) => acc.sum / acc.n,
  merge: (a, b) => ({ sum: a.sum + b.sum, n: a.n + b.n }),
};

/** A downstream keyed process function that reads each result's event timestamp. */
const withTimestamps = <T,>(keyOf: (value: T) => string) => (flow: Flow<T>) =>
  flow.pipe(
    keyBy(keyOf),
    process<T, [T, number | undefined]>({ onElement: (value, ctx, out) => out.emit([value, ctx.timestamp]) }, { uid: 'timestamps' }),
  );

describe('window functions', () => {
  it('reduce: one reduced record per window, stamped end - 1', async () => {
    const out = await runOut(events, (flow) => flow.pipe(windowed, reduce(sum, { uid: 'sum' }), withTimestamps((e: Ev) => e.k)));
    expect(out).toEqual([
      [ev('a', 1, 3), 9],
      [ev('b', 2, 10), 9],
      [ev('a', 13, 4), 19],
      [ev('b', 25, 20), 29],
    ]);
  });

  it('aggregate: getResult of the accumulator per window', async () => {
    const out = await runOut(events, (flow) => flow.pipe(windowed, aggregate(mean, { uid: 'mean' }), withTimestamps(String)));
    expect(out).toEqual([
      [1.5, 9],
      [10, 9],
      [4, 19],
      [20, 29],
    ]);
  });

  it('process: sees key, window start and end, watermark and every element, may emit several records and side outputs', async () => {
    const big = outputTag<string>('big');
    const out = await run(events, (flow) => {
      const main = flow.pipe(
        windowed,
        process<Ev, string>({
          process(key, ctx, elements, o) {
            o.emit(`${String(key)} [${ctx.window.start},${ctx.window.end}) max=${ctx.window.maxTimestamp} wm=${ctx.currentWatermark} ${elements.map((e) => e.v).join('+')}`);
            for (const e of elements) if (e.v >= 10) o.side(big, `${e.k}${e.v}`);
          },
        }, { uid: 'describe' }),
      );
      return { main: main.pipe(withTimestamps((s: string) => s[0]!)), big: main.pipe(sideOutput(big)) };
    });
    expect(out.main).toEqual([
      ['a [0,10) max=9 wm=12 1+2', 9],
      ['b [0,10) max=9 wm=12 10', 9],
      ['a [10,20) max=19 wm=24 4', 19],
      [`b [20,30) max=29 wm=${Number.MAX_SAFE_INTEGER} 20`, 29],
    ]);
    expect(out.big).toEqual(['b10', 'b20']);
  });

  it('reduce with { process }: incremental reduction, the process function gets the one result with its window', async () => {
    const out = await runOut(events, (flow) =>
      flow.pipe(
        windowed,
        reduce<Ev, string>(sum, {
          uid: 'sum',
          process: { process: (key, ctx, [total], o) => o.emit(`${String(key)}@${ctx.window.start}=${total!.v} (${[total].length})`) },
        }),
        withTimestamps((s: string) => s[0]!),
      ),
    );
    expect(out).toEqual([
      ['a@0=3 (1)', 9],
      ['b@0=10 (1)', 9],
      ['a@10=4 (1)', 19],
      ['b@20=20 (1)', 29],
    ]);
  });

  it('aggregate with { process }: the process function gets the aggregate result', async () => {
    const seen: number[][] = [];
    const out = await runOut(events, (flow) =>
      flow.pipe(
        windowed,
        aggregate<Ev, { sum: number; n: number }, number, string>(mean, {
          uid: 'mean',
          process: {
            process(key, ctx, results, o) {
              seen.push(results);
              o.emit(`${String(key)}:${ctx.window.end}:${results[0]}`);
            },
          },
        }),
      ),
    );
    expect(out).toEqual(['a:10:1.5', 'b:10:10', 'a:20:4', 'b:30:20']);
    expect(seen).toEqual([[1.5], [10], [4], [20]]);
  });

  it('window results carry event time on: a second window over the results of a first', async () => {
    // 10 ms sums (stamped 9, 19, 29, …) summed again in 30 ms windows.
    const many = Array.from({ length: 12 }, (_, i) => ev('a', i * 5, i));
    const out = await runOut(many, (flow) =>
      flow.pipe(windowed, reduce(sum, { uid: 'ten' }), keyBy((e: Ev) => e.k), window(tumbling(30)), reduce(sum, { uid: 'thirty' }), withTimestamps((e: Ev) => e.k)),
    );
    expect(out.map(([e, ts]) => [e.v, ts])).toEqual([
      [0 + 1 + 2 + 3 + 4 + 5, 29],
      [6 + 7 + 8 + 9 + 10 + 11, 59],
    ]);
  });

  it('a throw in a window function fails the job with that error', async () => {
    const promise = runOut(events, (flow) =>
      flow.pipe(windowed, process<Ev, never>({ process: () => { throw new Error('window function failed'); } })),
    );
    await expect(promise).rejects.toThrow('window function failed');
  });
});
