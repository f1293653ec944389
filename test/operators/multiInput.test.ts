// Multi-input operators: what they compute, and that a job restored after a cancel, or restarted after a failure, at
// seeded random points, gives exactly the output of a failure-free run (Flink's exactly-once state).
import { describe, expect, it } from 'vitest';
import {
  assignTimestamps,
  broadcast,
  connect,
  coProcess,
  filter,
  intervalJoin,
  join,
  keyBy,
  map,
  mapState,
  processBroadcast,
  reduce,
  tumbling,
  union,
  valueState,
  type Flow,
} from 'weir';
import { ev, runOut, runThreeWays, type Ev } from '../windows/fixtures';
import { random } from '../support/random';

const stampedEv = (flow: Flow<Ev>) => flow.pipe(assignTimestamps((e: Ev) => e.t, { outOfOrderness: 2, interval: 0 }));
const sortJson = (values: readonly unknown[]) => values.map((v) => JSON.stringify(v)).sort();

/** `count` events over 3 keys with slightly disordered timestamps; `v` is the index, so results tell records apart. */
function events(count: number, seed: number): Ev[] {
  const next = random(seed);
  return Array.from({ length: count }, (_, i) => ev(`k${Math.floor(next() * 3)}`, i * 2 + Math.floor(next() * 3), i));
}

// Each pipeline splits one source into two flows (fan-out) and meets them again in a multi-input operator.
const unionPipeline = (flow: Flow<Ev>) =>
  union(flow.pipe(filter((e: Ev) => e.v % 2 === 0)), flow.pipe(filter((e: Ev) => e.v % 2 === 1), map((e: Ev) => ({ ...e, v: e.v * 100 })))).pipe(
    keyBy((e: Ev) => e.k),
    reduce((a: Ev, b: Ev) => ({ k: a.k, t: b.t, v: a.v + b.v }), { uid: 'sum' }),
  );

/** Side 1 (v % 3 = 0) toggles a key on or off; side 2 counts, per key, the records seen while on; a timer reports. */
const enabled = valueState<boolean>('enabled', { default: false });
const counted = valueState<number>('counted', { default: 0 });
const coProcessPipeline = (flow: Flow<Ev>) => {
  const timed = stampedEv(flow);
  return connect(timed.pipe(filter((e: Ev) => e.v % 3 === 0), keyBy((e: Ev) => e.k)), timed.pipe(filter((e: Ev) => e.v % 3 !== 0), keyBy((e: Ev) => e.k))).pipe(
    coProcess<Ev, Ev, string>(
      {
        onElement1(_e, ctx) {
          ctx.state(enabled).update(!ctx.state(enabled).value());
        },
        onElement2(e, ctx, out) {
          if (!ctx.state(enabled).value()) return;
          ctx.state(counted).update(ctx.state(counted).value()! + 1);
          out.emit(`${e.k}:${e.v}`);
          ctx.timers.registerEventTimeTimer(Math.floor(e.t / 10) * 10 + 9);
        },
        onTimer(time, ctx, out) {
          out.emit(`${String(ctx.key)}@${time}=${ctx.state(counted).value()}`);
        },
      },
      { uid: 'toggle' },
    ),
  );
};

/** Broadcast side (v % 5 = 0) sets the minimum `v` that passes; keyed side counts what passes per key. */
const threshold = mapState<string, number>('threshold');
const passed = valueState<number>('passed', { default: 0 });
const broadcastPipeline = (flow: Flow<Ev>) =>
  connect(flow.pipe(filter((e: Ev) => e.v % 5 !== 0), keyBy((e: Ev) => e.k)), flow.pipe(filter((e: Ev) => e.v % 5 === 0), broadcast(threshold))).pipe(
    processBroadcast<Ev, Ev, string>(
      {
        onElement(e, ctx, out) {
          const min = ctx.broadcastState(threshold).get('min') ?? 0;
          if (e.v < min) return;
          ctx.state(passed).update(ctx.state(passed).value()! + 1);
          out.emit(`${e.k}:${e.v}>=${min}#${ctx.state(passed).value()}`);
        },
        onBroadcastElement(e, ctx) {
          ctx.broadcastState(threshold).put('min', (e.v * 7) % 40);
        },
      },
      { uid: 'rules' },
    ),
  );

const joinPipeline = (flow: Flow<Ev>) => {
  const timed = stampedEv(flow);
  return join(timed.pipe(filter((e: Ev) => e.v % 2 === 0), keyBy((e: Ev) => e.k)), timed.pipe(filter((e: Ev) => e.v % 2 === 1), keyBy((e: Ev) => e.k)), {
    window: tumbling(10),
    apply: (a: Ev, b: Ev) => `${a.k}:${a.v}+${b.v}`,
    uid: 'join',
  });
};

const intervalJoinPipeline = (flow: Flow<Ev>) => {
  const timed = stampedEv(flow);
  return intervalJoin(timed.pipe(filter((e: Ev) => e.v % 2 === 0), keyBy((e: Ev) => e.k)), timed.pipe(filter((e: Ev) => e.v % 2 === 1), keyBy((e: Ev) => e.k)), {
    lowerBound: -2,
    upperBound: 3,
    apply: (a: Ev, b: Ev) => `${a.k}:${a.v}+${b.v}`,
    uid: 'interval',
  });
};

describe('what multi-input operators compute', () => {
  it('union merges flows in arrival order into one keyed reduce', async () => {
    const out = await runOut([ev('a', 0, 1), ev('a', 1, 2), ev('b', 2, 3), ev('a', 3, 4)], unionPipeline);
    // odd values go through the second branch, ×100
    expect(out).toEqual([ev('a', 0, 100), ev('a', 1, 102), ev('b', 2, 300), ev('a', 3, 106)]);
  });

  it('coProcess shares keyed state and timers between its two inputs', async () => {
    // v=0 (toggle a on), v=1 a counted, v=2 b (off: dropped), v=3 toggle a off, v=4 a dropped, v=6 toggle a on, v=7 a
    const input = [ev('a', 0, 0), ev('a', 1, 1), ev('b', 2, 2), ev('a', 3, 3), ev('a', 4, 4), ev('a', 12, 6), ev('a', 13, 7)];
    expect(await runOut(input, coProcessPipeline)).toEqual(['a:1', 'a@9=1', 'a:7', 'a@19=2']);
  });

  it('every keyed record sees the broadcast state as the broadcast side last set it', async () => {
    // v=0 sets min 0; v=10 sets min 30; v=25 sets min 15
    const input = [ev('a', 0, 0), ev('a', 1, 3), ev('b', 2, 10), ev('b', 3, 12), ev('a', 4, 31), ev('b', 5, 25), ev('b', 6, 16), ev('a', 7, 14)];
    expect(await runOut(input, broadcastPipeline)).toEqual(['a:3>=0#1', 'a:31>=30#2', 'b:16>=15#1']);
  });

  it('join pairs the left and right records of one key in one window', async () => {
    const input = [ev('a', 1, 0), ev('a', 2, 1), ev('b', 3, 2), ev('a', 4, 3), ev('a', 5, 4), ev('a', 12, 6), ev('b', 13, 7), ev('a', 14, 9)];
    expect(sortJson(await runOut(input, joinPipeline))).toEqual(sortJson(['a:0+1', 'a:0+3', 'a:4+1', 'a:4+3', 'a:6+9']));
  });

  it('intervalJoin pairs records whose timestamps are within the bounds, as they arrive', async () => {
    // a:0@10 with a:1@9 (9-10=-1 ok), a:3@14 (+4, out); a:2@13 with a:3@14 (+1 ok); b:4@20 with b:5@18 (-2 ok)
    const input = [ev('a', 10, 0), ev('a', 9, 1), ev('a', 13, 2), ev('a', 14, 3), ev('b', 20, 4), ev('b', 18, 5)];
    expect(await runOut(input, intervalJoinPipeline)).toEqual(['a:0+1', 'a:2+3', 'b:4+5']);
  });
});

describe('restore correctness after failures at seeded random points', () => {
  const pipelines = { union: unionPipeline, coProcess: coProcessPipeline, broadcast: broadcastPipeline, join: joinPipeline, intervalJoin: intervalJoinPipeline };
  for (const [name, pipeline] of Object.entries(pipelines)) {
    it(`${name}: cancel + restore 'latest' and a restart after a failure both equal a failure-free run`, async () => {
      for (const seed of [1, 2, 3]) {
        const input = events(40, seed);
        const next = random(seed * 97);
        const at = 1 + Math.floor(next() * (input.length - 2));
        const failAt = at + Math.floor(next() * (input.length - at));
        const { uninterrupted, restored, restarted } = await runThreeWays(input, pipeline as (flow: Flow<Ev>) => Flow<unknown>, { at, failAt });
        expect(uninterrupted.out!.length, `seed ${seed}`).toBeGreaterThan(0);
        expect(sortJson(restored.out!), `seed ${seed}: restored from before ${at}`).toEqual(sortJson(uninterrupted.out!));
        expect(sortJson(restarted.out!), `seed ${seed}: failed at ${failAt}`).toEqual(sortJson(uninterrupted.out!));
      }
    });
  }
});
