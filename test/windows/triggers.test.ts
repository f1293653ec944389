import { describe, expect, it } from 'vitest';
import {
  eventTimeTrigger,
  keyBy,
  lateData,
  process,
  purging,
  reduce,
  session,
  sliding,
  tumbling,
  window,
  type Flow,
  type Trigger,
  type WindowAssigner,
  type WindowOptions,
} from 'weir';
import { ev, listWindows, run, runOut, stamped, sum, timestamps, triples, type Ev, type Stamped } from './fixtures';


/** Sums per window with `options`; `out` has `{ value, ts }` per firing, `late` the late records. */
const summed = (assigner: WindowAssigner, options: WindowOptions, outOfOrderness = 0) => (flow: Flow<Ev>) => {
  const sums = flow.pipe(timestamps(outOfOrderness), keyBy((e: Ev) => e.k), window(assigner, options), reduce(sum, { uid: 'sum' }));
  return { out: sums.pipe(stamped()), late: sums.pipe(lateData<Ev>(), stamped()) };
};

/** Session windows (gap 10) listing their values; `late` the late records. */
const sessionsWithLate = (flow: Flow<Ev>) => {
  const sessions = flow.pipe(timestamps(), keyBy((e: Ev) => e.k), window(session(10)), listWindows());
  return { out: sessions, late: sessions.pipe(lateData<Ev>()) };
};

describe('allowed lateness', () => {
  const events = [
    ev('a', 1, 1),
    ev('a', 12, 2), // watermark 11: [0,10) fires with 1
    ev('a', 3, 4), // late but within lateness (9 + 5 > 11): fires again with everything so far
    ev('a', 14, 8), // watermark 13
    ev('a', 4, 16), // 9 + 5 = 14 > 13: still within lateness, fires again
    ev('a', 15, 32), // watermark 14 = 9 + 5: [0,10) is cleaned up
    ev('a', 5, 64), // its window is gone: late data, not a new firing
  ];

  it('re-fires a window for each late record within lateness with the accumulated contents; later ones go to lateData()', async () => {
    const { out, late } = await run(events, summed(tumbling(10), { allowedLateness: 5 }));
    expect(triples(out!)).toEqual([
      ['a', 1, 9],
      ['a', 5, 9],
      ['a', 21, 9],
      ['a', 42, 19],
    ]);
    // A late record keeps its own timestamp.
    expect(late).toEqual([{ value: ev('a', 5, 64), ts: 5 }]);
  });

  it('drops records past the lateness when nobody reads lateData()', async () => {
    const out = await runOut(events, (flow) => flow.pipe(timestamps(), keyBy((e: Ev) => e.k), window(tumbling(10), { allowedLateness: 5 }), reduce(sum, { uid: 'sum' })));
    expect(out.map((e) => e.v)).toEqual([1, 5, 21, 42]);
  });

  it('is 0 by default: a record is late once the watermark reached its window end - 1', async () => {
    const { out, late } = await run([ev('a', 1, 1), ev('a', 10, 2), ev('a', 9, 4), ev('a', 20, 8)], summed(tumbling(10), {}));
    expect(triples(out!)).toEqual([
      ['a', 1, 9],
      ['a', 2, 19],
      ['a', 8, 29],
    ]);
    expect((late as Stamped<Ev>[]).map((s) => s.value.v)).toEqual([4]);
  });

  it('with purging(eventTimeTrigger()) a late firing emits only what came since the last one', async () => {
    const { out } = await run(events, summed(tumbling(10), { allowedLateness: 5, trigger: purging(eventTimeTrigger()) }));
    expect((out as Stamped<Ev>[]).map((s) => s.value.v)).toEqual([1, 4, 16, 42]);
  });

  it('sliding: a record late for some of its windows is added to the others, and is not late data', async () => {
    // After t=12 the watermark is 11: of the windows of t=7, [0,10) is late and [5,15) is not.
    const { out, late } = await run([ev('a', 1, 1), ev('a', 12, 2), ev('a', 7, 4)], (flow) => {
      const windows = flow.pipe(
        timestamps(),
        keyBy((e: Ev) => e.k),
        window(sliding(10, 5)),
        process<Ev, [number, number[]]>({ process: (_k, ctx, elements, o) => o.emit([ctx.window.start, elements.map((e) => e.v)]) }),
      );
      return { out: windows, late: windows.pipe(lateData()) };
    });
    expect(out).toEqual([
      [-5, [1]],
      [0, [1]],
      [5, [2, 4]],
      [10, [2]],
    ]);
    expect(late).toEqual([]);
  });

  it('does not overflow with a huge lateness: windows are kept to the end of input and re-fire for every late record', async () => {
    for (const allowedLateness of [Number.MAX_SAFE_INTEGER, Number.MAX_VALUE]) {
      const { out, late } = await run([ev('a', 1, 1), ev('a', 1_000_000, 2), ev('a', 2, 4), ev('a', 3, 8)], summed(tumbling(10), { allowedLateness }));
      expect(triples(out!)).toEqual([
        ['a', 1, 9],
        ['a', 5, 9],
        ['a', 13, 9],
        ['a', 2, 1_000_009],
      ]);
      expect(late).toEqual([]);
    }
  });

  it('session windows: a late record does not linger as a session that a later record would merge with', async () => {
    // The watermark reaches 99 through key b. a@90 opens [90, 100), late at once (99 ≤ 99): late data. a@100 then
    // opens [100, 110): in Flink the late window was retired, so a@100 starts a session of its own.
    const { out, late } = await run([ev('b', 100), ev('a', 90, 1), ev('a', 100, 2)], sessionsWithLate);
    expect(late).toEqual([ev('a', 90, 1)]);
    expect(out).toEqual([
      ['b', 100, 110, [1]],
      ['a', 100, 110, [2]],
    ]);
  });

  it('session windows: a late record that merges into a session still open is not late', async () => {
    // a's session [95, 105) is still open at watermark 99; a@88 opens [88, 98), which merges with it.
    const { out, late } = await run([ev('a', 95, 1), ev('b', 100), ev('a', 88, 2)], sessionsWithLate);
    expect(late).toEqual([]);
    expect(out).toEqual([
      ['a', 88, 105, [1, 2]],
      ['b', 100, 110, [1]],
    ]);
  });
});

describe('custom triggers', () => {
  /** Fires every second record early, fires and purges at the window end; records what it is asked to clear. */
  function earlyEverySecond(cleared: string[]): Trigger {
    return {
      name: 'earlyEverySecond',
      onElement(_timestamp, window, ctx) {
        ctx.registerEventTimeTimer(window.maxTimestamp);
        const seen = ctx.state<number>('seen');
        const n = (seen.get() ?? 0) + 1;
        seen.set(n);
        return n % 2 === 0 ? 'fire' : 'continue';
      },
      onEventTime: (time, window) => (time === window.maxTimestamp ? 'fire-and-purge' : 'continue'),
      onProcessingTime: () => 'continue',
      clear(window, ctx) {
        cleared.push(`${String(ctx.key)} ${window.start}-${window.end} seen=${ctx.state<number>('seen').get()}`);
        ctx.deleteEventTimeTimer(window.maxTimestamp);
        ctx.state<number>('seen').set(undefined);
      },
    };
  }

  it('drive firing through the Trigger interface, with state per key and window, timers and clear', async () => {
    const cleared: string[] = [];
    const events = [ev('a', 1, 1), ev('b', 2, 100), ev('a', 2, 2), ev('a', 3, 4), ev('b', 15, 200), ev('a', 15, 8)];
    const { out } = await run(events, summed(tumbling(10), { trigger: earlyEverySecond(cleared) }));
    expect((out as Stamped<Ev>[]).map(({ value, ts }) => [value.k, value.v, ts])).toEqual([
      ['a', 3, 9], // second record of a in [0,10): early firing
      ['a', 7, 9], // watermark 14 passes 9: fire and purge (the early firing did not purge)
      ['b', 100, 9],
      ['b', 200, 19], // end of input
      ['a', 8, 19],
    ]);
    // clear runs when each window's state is dropped (at its end: no lateness), with the trigger's state still there.
    expect(cleared).toEqual(['a 0-10 seen=3', 'b 0-10 seen=1', 'b 10-20 seen=1', 'a 10-20 seen=1']);
  });
});
