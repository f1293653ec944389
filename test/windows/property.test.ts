import { describe, expect, it } from 'vitest';
import {
  aggregate,
  assignTimestamps,
  keyBy,
  lateData,
  process,
  reduce,
  session,
  sliding,
  tumbling,
  valueState,
  window,
  type Flow,
} from 'weir';
import { random } from '../support/random';
import { ev, runThreeWays, stamped, sum, type Ev } from './fixtures';

/** Random events: a few keys, time moving forward in random steps, some records out of order, some very late. */
function randomEvents(rand: () => number, n: number): Ev[] {
  let now = Math.floor(rand() * 50) - 25;
  return Array.from({ length: n }, (_, i) => {
    now += Math.floor(rand() * 6);
    const back = rand() < 0.25 ? Math.floor(rand() * 12) : rand() < 0.08 ? 20 + Math.floor(rand() * 40) : 0;
    return ev(`k${Math.floor(rand() * 4)}`, now - back, i);
  });
}

/** Every kind of window and timer at once, with late data, so one run compares them all. */
function pipeline(outOfOrderness: number) {
  return (flow: Flow<Ev>) => {
    const keyed = flow.pipe(assignTimestamps((e: Ev) => e.t, { outOfOrderness, interval: 0 }), keyBy((e: Ev) => e.k));
    const tumblingSums = keyed.pipe(window(tumbling(15), { allowedLateness: 10 }), reduce(sum, { uid: 'tumbling' }));
    const slidingLists = keyed.pipe(
      window(sliding(20, 5, 2)),
      process<Ev, string>({ process: (key, ctx, es, out) => out.emit(`${String(key)} ${ctx.window.start} ${es.map((e) => e.v).join(',')}`) }, { uid: 'sliding' }),
    );
    const sessions = keyed.pipe(
      window(session(6), { allowedLateness: 4 }),
      aggregate<Ev, number[], number[], string>({ createAccumulator: () => [], add: (e, acc) => [...acc, e.v], getResult: (acc) => acc, merge: (a, b) => [...a, ...b] }, {
        uid: 'sessions',
        process: { process: (key, ctx, [values], out) => out.emit(`${String(key)} [${ctx.window.start},${ctx.window.end}) ${[...values!].sort((a, b) => a - b).join(',')}`) },
      }),
    );
    const last = valueState<number>('last');
    const timers = keyed.pipe(
      process<Ev, string>({
        onElement(e, ctx, out) {
          out.emit(`${e.k}:${e.v}`);
          ctx.state(last).update(e.v);
          ctx.timers.registerEventTimeTimer(e.t + 8);
          // A timer at the current watermark fires with the next watermark that advances.
          const watermark = ctx.timers.currentWatermark();
          if (e.v % 3 === 0 && Number.isFinite(watermark)) ctx.timers.registerEventTimeTimer(watermark);
        },
        onTimer: (time, ctx, out) => out.emit(`${String(ctx.key)} ${time} last=${ctx.state(last).value()}`),
      }, { uid: 'timers' }),
    );
    return {
      tumbling: tumblingSums.pipe(stamped()),
      tumblingLate: tumblingSums.pipe(lateData<Ev>()),
      sliding: slidingLists.pipe(stamped()),
      sessions: sessions.pipe(stamped()),
      sessionsLate: sessions.pipe(lateData<Ev>()),
      timers,
    };
  };
}

describe('property: windowed output is the same with and without a restore at a random point', () => {
  for (const seed of [1, 2, 3, 5, 8, 13, 21, 34]) {
    it(`seed ${seed}`, async () => {
      const rand = random(seed);
      const events = randomEvents(rand, 60 + Math.floor(rand() * 40));
      const at = 1 + Math.floor(rand() * (events.length - 1));
      const failAt = at + Math.floor(rand() * (events.length - at));
      const outOfOrderness = Math.floor(rand() * 8);
      const { uninterrupted, restored, restarted } = await runThreeWays(events, pipeline(outOfOrderness), { at, failAt });
      expect(uninterrupted.tumbling!.length).toBeGreaterThan(0);
      expect(restored, `seed ${seed}: restored before record ${at}`).toEqual(uninterrupted);
      expect(restarted, `seed ${seed}: checkpoint before ${at}, failure at ${failAt}`).toEqual(uninterrupted);
    });
  }
});
