import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  eventTimeTrigger,
  keyBy,
  lateData,
  memoryCheckpointStorage,
  reduce,
  sliding,
  tumbling,
  window,
  type AggregateFunction,
  type Flow,
  type JobOptions,
  type WindowAssigner,
} from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { random } from '../support/random';
import { buildJob, ev, gates, run, runThreeWays, scriptedSource, stamped, timestamps, triples, type Ev, type Pipeline } from './fixtures';

/** Random events: a few keys, time moving forward in random steps, some records out of order, some very late. */
function randomEvents(rand: () => number, n: number): Ev[] {
  let now = Math.floor(rand() * 50) - 25;
  return Array.from({ length: n }, (_, i) => {
    now += Math.floor(rand() * 4);
    const back = rand() < 0.25 ? Math.floor(rand() * 12) : rand() < 0.1 ? 10 + Math.floor(rand() * 30) : 0;
    return ev(`k${Math.floor(rand() * 4)}`, now - back, i + 1);
  });
}

/**
 * A sum whose result does not depend on the order records are combined in: slices merge in time order, not in the
 * order records arrived (`sum` keeps the first record's timestamp, the one that arrived first per window).
 */
const total = (a: Ev, b: Ev): Ev => ({ k: a.k, t: Math.min(a.t, b.t), v: a.v + b.v });

/** Values of a window as a sorted list (an aggregate whose merge order does not show in the result). */
const collectValues: AggregateFunction<Ev, number[], string> = {
  createAccumulator: () => [],
  add: (e, acc) => {
    acc.push(e.v);
    return acc;
  },
  getResult: (acc) => [...acc].sort((a, b) => a - b).join(','),
  // Reuses its first accumulator, as Flink allows: slices must not see it.
  merge: (a, b) => {
    a.push(...b);
    return a;
  },
};

/**
 * Sums and value lists per window, with late data. `perWindow` gives the event-time trigger explicitly, which keeps
 * the operator that holds one state per window (a trigger of one's own may fire at any time, so no slices): the
 * reference the sliced operator must agree with.
 */
function windowed(assigner: WindowAssigner, allowedLateness: number, outOfOrderness: number, perWindow = false) {
  const options = perWindow ? { allowedLateness, trigger: eventTimeTrigger() } : { allowedLateness };
  return (flow: Flow<Ev>) => {
    const keyed = flow.pipe(timestamps(outOfOrderness), keyBy((e: Ev) => e.k));
    const sums = keyed.pipe(window(assigner, options), reduce(total, { uid: 'sums' }));
    const lists = keyed.pipe(
      window(assigner, options),
      aggregate(collectValues, {
        uid: 'lists',
        process: { process: (key, ctx, [values], out) => out.emit(`${String(key)} [${ctx.window.start},${ctx.window.end}) ${values}`) },
      }),
    );
    return { sums: sums.pipe(stamped()), late: sums.pipe(lateData<Ev>()), lists: lists.pipe(stamped()) };
  };
}

/** Outputs as sorted lists: results of different keys at one instant may come in another order. */
const sorted = (outputs: Record<string, unknown[]>) =>
  Object.fromEntries(Object.entries(outputs).map(([name, values]) => [name, values.map((v) => JSON.stringify(v)).sort()]));

const configurations: [string, WindowAssigner, number][] = [
  ['sliding(20, 5)', sliding(20, 5), 0],
  ['sliding(20, 5) with lateness', sliding(20, 5), 12],
  ['sliding(10, 4, 1) (slices of 2)', sliding(10, 4, 1), 6],
  ['sliding(9, 6) (slices of 3)', sliding(9, 6), 0],
  ['tumbling(15) with lateness', tumbling(15), 10],
  ['tumbling(8, 3)', tumbling(8, 3), 0],
];

describe('sliced windows compute what per-window state computes', () => {
  for (const [name, assigner, lateness] of configurations) {
    for (const seed of [1, 2, 3, 4]) {
      it(`${name}, seed ${seed}`, async () => {
        const rand = random(seed * 7919 + lateness);
        const events = randomEvents(rand, 80 + Math.floor(rand() * 40));
        const outOfOrderness = Math.floor(rand() * 8);
        const sliced = await run(events, windowed(assigner, lateness, outOfOrderness));
        const reference = await run(events, windowed(assigner, lateness, outOfOrderness, true));
        expect(sliced.sums!.length).toBeGreaterThan(0);
        expect(sorted(sliced)).toEqual(sorted(reference));
      });
    }
  }
});

describe('sliced sliding windows, firing', () => {
  it('records of one key in one slice, around firings of the windows that hold it, count once each', async () => {
    // Runs of one key in one slice (which skip looking at the slice again), broken by other keys and by watermarks
    // that fire, and within the lateness fire again, the windows sharing the slice.
    const events = [ev('a', 6, 1), ev('a', 7, 2), ev('a', 8, 4), ev('b', 7, 8), ev('a', 7, 16), ev('a', 14, 32), ev('a', 9, 64), ev('a', 8, 128), ev('b', 12, 256), ev('b', 13, 512), ev('a', 19, 1024), ev('a', 6, 2048), ev('a', 40, 4096), ev('a', 7, 8192)];
    const sliced = await run(events, windowed(sliding(10, 5), 6, 0));
    const reference = await run(events, windowed(sliding(10, 5), 6, 0, true));
    expect(sliced.sums!.length).toBeGreaterThan(0);
    expect(sliced.late!.length).toBeGreaterThan(0);
    expect(sorted(sliced)).toEqual(sorted(reference));
  });

  it('a record within the allowed lateness fires every window of it that fired, with what it held', async () => {
    const events = [ev('a', 1, 1), ev('a', 6, 10), ev('a', 30, 100), ev('a', 3, 1000), ev('a', 45, 10_000), ev('a', 2, 5)];
    // Sliced, and with one state per window (the trigger given explicitly): the same firings in the same order.
    for (const options of [{ allowedLateness: 26 }, { allowedLateness: 26, trigger: eventTimeTrigger() }]) {
      const out = await run(events, (flow) => {
        const sums = flow.pipe(timestamps(), keyBy((e: Ev) => e.k), window(sliding(10, 5), options), reduce(total, { uid: 'sums' }));
        return { sums: sums.pipe(stamped()), late: sums.pipe(lateData<Ev>()) };
      });
      expect(triples(out.sums!)).toEqual([
      // The watermark 5 fires [-5, 5), the watermark 29 [0, 10) and [5, 15).
      ['a', 1, 4],
      ['a', 11, 9],
      ['a', 10, 14],
      // 3 is late for [-5, 5) and [0, 10), within the lateness (4 + 26 > 29): they fire again at once, latest first.
      ['a', 1011, 9],
      ['a', 1001, 4],
      // The watermark 45 fires up to [35, 45): [25, 35) and [30, 40) hold 30.
      ['a', 100, 34],
      ['a', 100, 39],
      // 2 comes after the cleanup of both its windows (9 + 26 < 44): late data; the end of input fires the rest.
      ['a', 10_000, 49],
      ['a', 10_000, 54],
      ]);
      expect(out.late).toEqual([ev('a', 2, 5)]);
    }
  });
});

describe('sliced windows across checkpoints', () => {
  for (const seed of [1, 2, 3]) {
    it(`restore mid-window and restart give the uninterrupted output (seed ${seed})`, async () => {
      const rand = random(seed * 31);
      const events = randomEvents(rand, 70);
      const at = 10 + Math.floor(rand() * 50);
      const { uninterrupted, restored, restarted } = await runThreeWays(events, windowed(sliding(20, 5), 8, 3), { at, failAt: at + 5 });
      expect(uninterrupted.sums!.length).toBeGreaterThan(0);
      expect(restored).toEqual(uninterrupted);
      expect(restarted).toEqual(uninterrupted);
    });
  }

  /** Runs `before` up to record `at`, checkpoints, cancels, and continues with `after` restored from the checkpoint. */
  async function restoreInto(events: Ev[], at: number, before: Pipeline<Ev>, after: Pipeline<Ev>, options: [Partial<JobOptions>, Partial<JobOptions>] = [{}, {}]) {
    const storage = memoryCheckpointStorage();
    const gate = gates([at]);
    const one = buildJob(scriptedSource(events, (i) => gate.before(i)), before, { ...options[0], checkpoints: { storage } });
    const running = one.job.start();
    await gate.reached(at);
    await running.checkpoint();
    await running.cancel();
    const two = buildJob(scriptedSource(events), after, { ...options[1], checkpoints: { storage } });
    await two.job.start({ restore: 'latest' }).done;
    return Object.fromEntries(Object.keys(two.outs).map((name) => [name, [...one.outs[name]!.values, ...two.outs[name]!.values]]));
  }

  for (const seed of [1, 2, 3, 4]) {
    it(`state kept per window (the layout before slices) restores into sliced windows mid-window (seed ${seed})`, async () => {
      const rand = random(seed * 101);
      const events = randomEvents(rand, 80);
      const at = 20 + Math.floor(rand() * 40);
      for (const [assigner, lateness] of [[sliding(20, 5), 10], [sliding(10, 4, 1), 0], [tumbling(15), 6]] as const) {
        const uninterrupted = await run(events, windowed(assigner, lateness, 3));
        const restored = await restoreInto(events, at, windowed(assigner, lateness, 3, true), windowed(assigner, lateness, 3));
        expect(sorted(restored), `${assigner.name} restored before record ${at}`).toEqual(sorted(uninterrupted));
      }
    });
  }

  it('sliced state rescales: a checkpoint at parallelism 2 restores at 3 and at 1', async () => {
    const rand = random(77);
    const events = randomEvents(rand, 120).map((e, i) => ({ ...e, k: `k${i % 7}` }));
    const pipeline = windowed(sliding(20, 5), 8, 3);
    const uninterrupted = await run(events, pipeline, { parallelism: 2 });
    for (const parallelism of [3, 1]) {
      const rescaled = await restoreInto(events, 60, pipeline, pipeline, [{ parallelism: 2 }, { parallelism }]);
      expect(sorted(rescaled), `2 → ${parallelism}`).toEqual(sorted(uninterrupted));
    }
  });

  it('a savepoint of per-window state restores into sliced windows', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weir-slices-'));
    try {
      const events = randomEvents(random(5), 80);
      const uninterrupted = await run(events, windowed(sliding(20, 5), 10, 3));
      const gate = gates([40]);
      const one = buildJob(scriptedSource(events, (i) => gate.before(i)), windowed(sliding(20, 5), 10, 3, true), {
        checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) },
      });
      const running = one.job.start();
      await gate.reached(40);
      const savepoint = await running.savepoint({ path: join(dir, 'savepoints') });
      await running.cancel();
      const two = buildJob(scriptedSource(events), windowed(sliding(20, 5), 10, 3), { checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints-2')) } });
      await two.job.start({ restore: { savepoint: savepoint.path } }).done;
      const restored = Object.fromEntries(Object.keys(two.outs).map((name) => [name, [...one.outs[name]!.values, ...two.outs[name]!.values]]));
      expect(sorted(restored)).toEqual(sorted(uninterrupted));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('sliced sliding windows over many keys with one record per key and slice', () => {
  it('agree with per-window state after the operator stops tracking held slices in memory', async () => {
    // 3,000 keys × 70 slices, one record each: past the operator's check (200k lookups), tracking which slices a key
    // holds saves nothing, so its in-memory partials go to the state mid-stream and later records go there directly.
    const events: Ev[] = [];
    for (let slice = 0; slice < 70; slice++) for (let k = 0; k < 3000; k++) events.push(ev(`k${k}`, slice * 5 + (k % 5), (k % 7) + slice));
    const pipeline = (perWindow: boolean) => (flow: Flow<Ev>) =>
      flow.pipe(
        timestamps(),
        keyBy((e: Ev) => e.k),
        window(sliding(20, 5), perWindow ? { trigger: eventTimeTrigger() } : {}),
        reduce(total, { uid: 'sums' }),
        stamped(),
      );
    const sliced = await run(events, pipeline(false));
    const reference = await run(events, pipeline(true));
    expect(sliced[Object.keys(sliced)[0]!]!.length).toBe(3000 * 73);
    expect(sorted(sliced)).toEqual(sorted(reference));
  }, 60_000);
});

describe('sliced tumbling windows over runs of one key', () => {
  /** Long runs of one key (a windowAll's one key, a hot key), broken by other keys, firings and late records. */
  function runsOfOneKey(rand: () => number, n: number): Ev[] {
    let key = 'a';
    return randomEvents(rand, n).map((e) => {
      if (rand() < 0.1) key = `k${Math.floor(rand() * 3)}`;
      return { ...e, k: key };
    });
  }

  for (const seed of [1, 2, 3]) {
    it(`combine the run's records as per-window state does (seed ${seed})`, async () => {
      const rand = random(seed * 613);
      const events = runsOfOneKey(rand, 120);
      for (const [assigner, lateness] of [[tumbling(15), 10], [tumbling(8, 3), 0]] as const) {
        const sliced = await run(events, windowed(assigner, lateness, 3));
        const reference = await run(events, windowed(assigner, lateness, 3, true));
        expect(sliced.sums!.length).toBeGreaterThan(0);
        expect(sorted(sliced), assigner.name).toEqual(sorted(reference));
      }
    });

    it(`a checkpoint in the middle of a run restores and restarts to the uninterrupted output (seed ${seed})`, async () => {
      const rand = random(seed * 617);
      const events = runsOfOneKey(rand, 80);
      const at = 10 + Math.floor(rand() * 50);
      const { uninterrupted, restored, restarted } = await runThreeWays(events, windowed(tumbling(15), 6, 3), { at, failAt: at + 5 });
      expect(uninterrupted.sums!.length).toBeGreaterThan(0);
      expect(restored).toEqual(uninterrupted);
      expect(restarted).toEqual(uninterrupted);
    });
  }
});
