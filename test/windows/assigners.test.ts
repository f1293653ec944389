import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  count,
  countWindow,
  globalWindow,
  keyBy,
  process,
  purging,
  reduce,
  session,
  sliding,
  tumbling,
  window,
  type Flow,
  type WindowAssigner,
} from 'weir';
import { advanceTo } from '../support/virtualTime';
import { buildJob, ev, listWindows, runOut, scriptedSource, stamped, sum, timestamps, triples, type Ev, type Firing, type Stamped } from './fixtures';

const sumPerWindow = (assigner: WindowAssigner, outOfOrderness = 0) => (flow: Flow<Ev>) =>
  flow.pipe(timestamps(outOfOrderness), keyBy((e: Ev) => e.k), window(assigner), reduce(sum, { uid: 'sum' }), stamped());
const windowsOf = (assigner: WindowAssigner, outOfOrderness = 0) => (flow: Flow<Ev>) =>
  flow.pipe(timestamps(outOfOrderness), keyBy((e: Ev) => e.k), window(assigner), listWindows());

describe('tumbling windows in event time', () => {
  it('fire per key when the watermark passes end - 1, stamped end - 1, in watermark order', async () => {
    const events = [ev('a', 1, 1), ev('a', 5, 2), ev('b', 7, 10), ev('a', 12, 4), ev('b', 25, 20), ev('a', 9, 100)];
    const out = await runOut(events, sumPerWindow(tumbling(10)));
    // a@9 arrives after the watermark reached 24: its window [0, 10) is gone, so it is dropped.
    expect(triples(out)).toEqual([
      ['a', 3, 9],
      ['b', 10, 9],
      ['a', 4, 19],
      ['b', 20, 29],
    ]);
  });

  it('fire exactly when the watermark reaches end - 1, not before', async () => {
    // Watermark = max timestamp - 1: t=9 gives watermark 8 (window [0,10) still open), t=10 gives 9 (it fires).
    const fired: string[] = [];
    const events = [ev('a', 3), ev('a', 9), ev('a', 10), ev('a', 20)];
    const out = await runOut(events, (flow) =>
      flow.pipe(
        timestamps(),
        keyBy((e: Ev) => e.k),
        window(tumbling(10)),
        process<Ev, Firing>({
          process(key, ctx, elements, out) {
            fired.push(`${ctx.window.start}-${ctx.window.end}@wm${ctx.currentWatermark}`);
            out.emit([String(key), ctx.window.start, ctx.window.end, elements.map((e) => e.t)]);
          },
        }),
      ),
    );
    expect(out).toEqual([
      ['a', 0, 10, [3, 9]],
      ['a', 10, 20, [10]],
      ['a', 20, 30, [20]],
    ]);
    expect(fired).toEqual(['0-10@wm9', '10-20@wm19', `20-30@wm${Number.MAX_SAFE_INTEGER}`]);
  });

  it('honour the offset, also for negative timestamps (Flink getWindowStartWithOffset)', async () => {
    const events = [ev('a', -1), ev('a', 2), ev('a', 3), ev('a', 12), ev('a', 13)];
    expect(await runOut(events, windowsOf(tumbling(10, 3)))).toEqual([
      ['a', -7, 3, [1, 1]],
      ['a', 3, 13, [1, 1]],
      ['a', 13, 23, [1]],
    ]);
    expect(await runOut([ev('a', -4), ev('a', -3), ev('a', 6), ev('a', 7)], windowsOf(tumbling(10, { offset: -3 })))).toEqual([
      ['a', -13, -3, [1]],
      ['a', -3, 7, [1, 1]],
      ['a', 7, 17, [1]],
    ]);
  });

  it('keep records that arrive out of order within outOfOrderness', async () => {
    const events = [ev('a', 5, 1), ev('a', 14, 2), ev('a', 8, 4), ev('a', 19, 8), ev('a', 9, 16), ev('a', 21, 32)];
    // outOfOrderness 10: watermark after t=21 is 10, so [0,10) fires only then, with 5, 8 and 9.
    expect(triples(await runOut(events, sumPerWindow(tumbling(10), 10)))).toEqual([
      ['a', 21, 9],
      ['a', 10, 19],
      ['a', 32, 29],
    ]);
  });
});

describe('sliding windows in event time', () => {
  it('put each record in size / slide windows and fire them in end order', async () => {
    const events = [ev('a', 7, 1), ev('a', 12, 2), ev('b', 3, 4)];
    expect(await runOut(events, windowsOf(sliding(10, 5), 100))).toEqual([
      ['b', -5, 5, [4]],
      ['a', 0, 10, [1]],
      ['b', 0, 10, [4]],
      ['a', 5, 15, [1, 2]],
      ['a', 10, 20, [2]],
    ]);
  });

  it('handle a size that is not a multiple of the slide, and an offset', async () => {
    expect(await runOut([ev('a', 7)], windowsOf(sliding(10, 3)))).toEqual([
      ['a', 0, 10, [1]],
      ['a', 3, 13, [1]],
      ['a', 6, 16, [1]],
    ]);
    expect(await runOut([ev('a', 7)], windowsOf(sliding(10, 5, 2)))).toEqual([
      ['a', 2, 12, [1]],
      ['a', 7, 17, [1]],
    ]);
  });

  it('with slide = size behave as tumbling windows', async () => {
    const events = [ev('a', 1, 1), ev('a', 11, 2), ev('a', 12, 4)];
    expect(triples(await runOut(events, sumPerWindow(sliding(10, 10))))).toEqual(triples(await runOut(events, sumPerWindow(tumbling(10)))));
  });
});

describe('session windows in event time', () => {
  it('close after gap ms without records of the key', async () => {
    const events = [ev('a', 1, 1), ev('b', 2, 10), ev('a', 5, 2), ev('a', 30, 4), ev('b', 40, 20)];
    // b's session [2, 12) ends before a's [1, 15): windows fire in the order of their ends.
    expect(await runOut(events, windowsOf(session(10)))).toEqual([
      ['b', 2, 12, [10]],
      ['a', 1, 15, [1, 2]],
      ['a', 30, 40, [4]],
      ['b', 40, 50, [20]],
    ]);
  });

  it('merge two sessions, with their contents, when a record bridges them', async () => {
    const events = [ev('a', 1, 1), ev('a', 18, 2), ev('a', 9, 4), ev('a', 60, 8)];
    expect(await runOut(events, windowsOf(session(10), 100))).toEqual([
      ['a', 1, 28, [1, 2, 4]],
      ['a', 60, 70, [8]],
    ]);
    // Incremental state (aggregate) is merged with the AggregateFunction's merge.
    const merges: number[][] = [];
    const out = await runOut(events, (flow) =>
      flow.pipe(
        timestamps(100),
        keyBy((e: Ev) => e.k),
        window(session(10)),
        aggregate<Ev, number[], number[]>(
          {
            createAccumulator: () => [],
            add: (e, acc) => [...acc, e.v],
            getResult: (acc) => acc,
            merge: (x, y) => (merges.push([...x, ...y]), [...x, ...y].sort((p, q) => p - q)),
          },
          { uid: 'agg' },
        ),
        stamped(),
      ),
    );
    expect(out).toEqual([
      { value: [1, 2, 4], ts: 27 },
      { value: [8], ts: 69 },
    ]);
    expect(merges).toEqual([[1, 2]]);
  });

  it('merge sessions that only touch (a record exactly gap after the previous one)', async () => {
    expect(await runOut([ev('a', 0), ev('a', 10), ev('a', 21)], windowsOf(session(10)))).toEqual([
      ['a', 0, 20, [1, 1]],
      ['a', 21, 31, [1]],
    ]);
  });

  it('merge trigger state: count(3) counts across merged sessions', async () => {
    const events = [ev('a', 1, 1), ev('a', 18, 2), ev('a', 9, 4)];
    const out = await runOut(events, (flow) =>
      flow.pipe(timestamps(100), keyBy((e: Ev) => e.k), window(session(10), { trigger: count(3) }), listWindows()),
    );
    expect(out).toEqual([['a', 1, 28, [1, 2, 4]]]);
  });
});

describe('global windows', () => {
  const values = [1, 2, 3, 4, 5, 6, 7].map((v) => ev('a', v, v));

  it('with count(n) fire every n records, keeping the contents (accumulating)', async () => {
    const out = await runOut(values, (flow) =>
      flow.pipe(keyBy((e: Ev) => e.k), window(globalWindow(), { trigger: count(3) }), reduce(sum, { uid: 'sum' }), stamped()),
    );
    expect(out.map((s) => s.value.v)).toEqual([6, 21]);
    // The global window's last instant: Flink stamps its results with Long.MAX_VALUE.
    expect(out.map((s) => s.ts)).toEqual([Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);
  });

  it('with purging(count(n)) fire each group of n once; an incomplete group never fires', async () => {
    const out = await runOut(values, (flow) =>
      flow.pipe(keyBy((e: Ev) => e.k), window(globalWindow(), { trigger: purging(count(3)) }), reduce(sum, { uid: 'sum' }), stamped()),
    );
    expect(out.map((s) => s.value.v)).toEqual([6, 15]);
  });

  it('never fire with the default trigger, even at the end of input', async () => {
    expect(await runOut(values, (flow) => flow.pipe(keyBy((e: Ev) => e.k), window(globalWindow()), reduce(sum, { uid: 'sum' })))).toEqual([]);
  });
});

describe('count windows', () => {
  const values = [1, 2, 3, 4, 5, 6, 7].map((v) => ev(v % 2 === 0 ? 'even' : 'odd', 0, v));

  it('countWindow(n) fires every n records of a key, each record in one window', async () => {
    const all = [1, 2, 3, 4, 5, 6, 7].map((v) => ev('a', 0, v));
    expect((await runOut(all, (flow) => flow.pipe(keyBy((e: Ev) => e.k), window(countWindow(3)), reduce(sum, { uid: 's' })))).map((e) => e.v)).toEqual([6, 15]);
    const out = await runOut(values, (flow) => flow.pipe(keyBy((e: Ev) => e.k), window(countWindow(2)), listWindows()));
    expect(out.map(([key, , , vs]) => [key, vs])).toEqual([
      ['odd', [1, 3]],
      ['even', [2, 4]],
      ['odd', [5, 7]],
    ]);
  });

  it('countWindow(n, slide) fires every slide records with the last n (fewer at first, as Flink)', async () => {
    const all = [1, 2, 3, 4, 5, 6].map((v) => ev('a', 0, v));
    const out = await runOut(all, (flow) => flow.pipe(keyBy((e: Ev) => e.k), window(countWindow(3, 1)), listWindows()));
    expect(out.map(([, , , vs]) => vs)).toEqual([[1], [1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]);
    const sums = await runOut(all, (flow) => flow.pipe(keyBy((e: Ev) => e.k), window(countWindow(3, 2)), reduce(sum, { uid: 's' })));
    expect(sums.map((e) => e.v)).toEqual([3, 9, 15]);
  });

  it('need no timestamps', async () => {
    const out = await runOut([ev('a', 0, 1), ev('a', 0, 2)], (flow) =>
      flow.pipe(keyBy((e: Ev) => e.k), window(countWindow(2)), aggregate({ createAccumulator: () => 0, add: (e: Ev, acc: number) => acc + e.v, getResult: (a) => a, merge: (a, b) => a + b }, { uid: 'n' })),
    );
    expect(out).toEqual([3]);
  });
});

describe('processing-time windows on a virtual clock', () => {
  /** Runs with record i arriving at processing time `arrivals[i]`, the clock at `end` before the end of input. */
  async function onClock(events: Ev[], arrivals: number[], end: number, pipeline: (flow: Flow<Ev>) => Flow<unknown>) {
    const scheduler = new VirtualTimeScheduler();
    const times = [...arrivals, end];
    const { job, outs } = buildJob(scriptedSource(events, (i) => advanceTo(scheduler, times[i]!)), pipeline, { scheduler });
    await job.start().done;
    return outs.out!.values;
  }
  const perWindow = (assigner: WindowAssigner) => (flow: Flow<Ev>) => flow.pipe(keyBy((e: Ev) => e.k), window(assigner), listWindows(), stamped());

  it('tumbling: windows by arrival time, fired when the clock reaches end - 1, stamped end - 1', async () => {
    const events = [ev('a', 0, 1), ev('a', 0, 2), ev('b', 0, 10), ev('a', 0, 4)];
    const out = await onClock(events, [1, 5, 7, 12], 100, perWindow(tumbling(10, { time: 'processing-time' })));
    expect(out).toEqual([
      { value: ['a', 0, 10, [1, 2]], ts: 9 },
      { value: ['b', 0, 10, [10]], ts: 9 },
      { value: ['a', 10, 20, [4]], ts: 19 },
    ]);
  });

  it('tumbling: a window fires when the clock reaches end - 1; a record arriving then fires it again on its own', async () => {
    const events = [ev('a', 0, 1), ev('a', 0, 2), ev('a', 0, 4), ev('a', 0, 8)];
    const out = await onClock(events, [0, 8, 9, 10], 30, perWindow(tumbling(10, { time: 'processing-time' })));
    // As in Flink: processing-time windows are never late; the window [0, 10) fired and was cleared at 9, the record
    // that arrives at 9 opens it again, and its timer (already due) fires it at once.
    expect(out.map((s) => (s as Stamped<Firing>).value)).toEqual([
      ['a', 0, 10, [1, 2]],
      ['a', 0, 10, [4]],
      ['a', 10, 20, [8]],
    ]);
  });

  it('sliding', async () => {
    const out = await onClock([ev('a', 0, 1), ev('a', 0, 2)], [7, 12], 100, perWindow(sliding(10, 5, { time: 'processing-time' })));
    expect(out.map((s) => (s as Stamped<Firing>).value)).toEqual([
      ['a', 0, 10, [1]],
      ['a', 5, 15, [1, 2]],
      ['a', 10, 20, [2]],
    ]);
  });

  it('session, merging by arrival time', async () => {
    const out = await onClock([ev('a', 0, 1), ev('a', 0, 2), ev('a', 0, 4)], [0, 8, 30], 100, perWindow(session(10, { time: 'processing-time' })));
    expect(out).toEqual([
      { value: ['a', 0, 18, [1, 2]], ts: 17 },
      { value: ['a', 30, 40, [4]], ts: 39 },
    ]);
  });

  it('do not fire at the end of input before the clock reaches them (Flink drops pending processing-time windows)', async () => {
    const out = await onClock([ev('a', 0, 1), ev('a', 0, 2)], [1, 12], 15, perWindow(tumbling(10, { time: 'processing-time' })));
    expect(out.map((s) => (s as Stamped<Firing>).value)).toEqual([['a', 0, 10, [1]]]);
  });
});
