import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  JobDefinitionError,
  MalformedRecordError,
  assignTimestamps,
  collect,
  createJob,
  fromSplits,
  keyBy,
  memoryCheckpointStorage,
  process,
  tumbling,
  window,
  type CheckpointStorage,
  type Flow,
  type JobOptions,
  type SourceWatermarkOptions,
} from 'weir';
import { advanceTo } from '../support/virtualTime';
import { deferred } from '../support/deferred';
import { ev, type Ev } from '../windows/fixtures';

/** `[key, window start, summed value, watermark that fired it]` per window firing. */
type Firing = [string, number, number, number];

const MAX = Number.MAX_SAFE_INTEGER;

/** Per-key tumbling(100) sums, each with the watermark at which its window fired. */
const windowSums = (flow: Flow<Ev>) =>
  flow.pipe(
    keyBy((e: Ev) => e.k),
    window(tumbling(100)),
    process<Ev, Firing>({
      process: (key, ctx, elements, out) => out.emit([String(key), ctx.window.start, elements.reduce((total, e) => total + e.v, 0), ctx.currentWatermark]),
    }),
  );

interface Script {
  /** Runs before record `i` of split `id` is handed out (it may hold it back with a promise). */
  before?(id: string, i: number): void | Promise<void>;
  /** Splits that, after their records, stay open with nothing to read until `a` is read to its end. */
  waiting?: readonly string[];
}

/**
 * A source of one split per part, read side by side by one subtask (as a broker's subjects are), one record per read.
 * A `waiting` split, once its records are out, returns empty reads while split `a` has records left, as an idle
 * broker subject does, and ends with it.
 */
function partsSource(parts: Record<string, readonly Ev[]>, script: Script = {}) {
  const ids = Object.keys(parts);
  let aDone = false;
  return fromSplits<Ev>('parts', {
    interleaved: true,
    list: () => ids.map((id) => ({ id, description: id })),
    open: (split, { restoredOffset }) => {
      const records = parts[split.id]!;
      let index = typeof restoredOffset === 'number' ? restoredOffset : 0;
      const next = (): Ev[] | null => {
        if (index < records.length) return [records[index++]!];
        if (split.id === 'a') aDone = true;
        return script.waiting?.includes(split.id) && !aDone ? [] : null;
      };
      return {
        read: () => {
          const hook = index < records.length ? script.before?.(split.id, index) : undefined;
          return hook instanceof Promise ? hook.then(next) : next();
        },
        offset: () => index,
      };
    },
  });
}

function buildJob(source: ReturnType<typeof partsSource>, watermarks: SourceWatermarkOptions<Ev> | undefined, options: Partial<JobOptions> = {}, parallelism = 1) {
  const job = createJob({ chunkSize: 1, ...options, name: 'split-watermarks' });
  const flow = job.source(source, { uid: 'in', parallelism, watermarks });
  const out = collect<Firing>();
  windowSums(watermarks ? flow : flow.pipe(assignTimestamps((e: Ev) => e.t, { interval: 0 }))).pipe(out.sink({ uid: 'out' }));
  return { job, out };
}

const byWindow = (firings: readonly Firing[]) => [...firings].sort((x, y) => x[0].localeCompare(y[0]) || x[1] - y[1]);

describe('watermarks generated per split at the source (job.source(…, { watermarks }))', () => {
  // Split a's event time runs 5 times faster than split b's; the subtask reads them in turn, one record each.
  const lagging = () => ({
    a: Array.from({ length: 100 }, (_, i) => ev('a', i * 10)),
    b: Array.from({ length: 100 }, (_, i) => ev('b', i * 2)),
  });

  it('holds the watermark at the lagging split: none of its records is late, and windows fire when both splits passed them', async () => {
    const { job, out } = buildJob(partsSource(lagging()), { timestamp: (e) => e.t, interval: 0 });
    await job.start().done;
    // [0,100) fires once b reaches t=100 (watermark min(a 499, b 99) = 99); b never reaches 200: the next ones fire
    // when b ends and no longer holds a back (a's watermark 989), the last at the end of input.
    expect(byWindow(out.values)).toEqual([
      ['a', 0, 10, 99],
      ...Array.from({ length: 8 }, (_, w): Firing => ['a', (w + 1) * 100, 10, 989]),
      ['a', 900, 10, MAX],
      ['b', 0, 50, 99],
      ['b', 100, 50, 989],
    ]);
  });

  it('(contrast) assignTimestamps after the source follows the fastest split, so the lagging split\'s records are late', async () => {
    const { job, out } = buildJob(partsSource(lagging()), undefined);
    await job.start().done;
    const b = out.values.filter(([k]) => k === 'b').reduce((total, [, , sum]) => total + sum, 0);
    expect(b).toBeLessThan(100);
  });

  it('checks the strategy where the source is added', () => {
    const job = createJob({ name: 'bad-strategy' });
    const source = partsSource(lagging());
    expect(() => job.source(source, { uid: 'x', watermarks: {} as SourceWatermarkOptions<Ev> })).toThrow(JobDefinitionError);
    expect(() => job.source(source, { uid: 'y', watermarks: { timestamp: (e) => e.t, outOfOrderness: -1 } })).toThrow(/outOfOrderness/);
    expect(() => job.source(source, { uid: 'z', watermarks: { timestamp: (e: Ev) => e.t, idle: 5 } as never })).toThrow(/idle/);
    const flow = job.source(source, { uid: 'w', watermarks: { timestamp: (e) => e.t } });
    expect(() => flow.pipe(assignTimestamps((e: Ev) => e.t))).toThrow(/one watermark strategy per flow/);
  });

  it('fails the job with MalformedRecordError for a record whose timestamp is not a finite number', async () => {
    const { job } = buildJob(partsSource({ a: [ev('a', 1), { k: 'a', t: Number.NaN, v: 1 }] }), { timestamp: (e) => e.t, interval: 0 });
    const error = await job.start().done.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedRecordError);
    expect((error as Error).message).toContain("operator 'in'");
  });

  describe('an empty split', () => {
    // Split a has a record every 10 ms of the job's (virtual) clock, t = 0, 10, …, 290; split b has none and stays
    // open until a is read to its end.
    const run = async (idleTimeout: number | undefined) => {
      const scheduler = new VirtualTimeScheduler();
      let readOfA = 0;
      const source = partsSource(
        { a: Array.from({ length: 30 }, (_, i) => ev('a', i * 10)), b: [] },
        {
          waiting: ['b'],
          before: (_id, i) => {
            advanceTo(scheduler, i * 10);
            readOfA = i + 1;
          },
        },
      );
      const job = createJob({ chunkSize: 1, scheduler, name: 'empty-split' });
      const fired: [Firing, number][] = [];
      windowSums(job.source(source, { uid: 'in', parallelism: 1, watermarks: { timestamp: (e) => e.t, interval: 10, idleTimeout } })).pipe(
        process<Firing, never>({ onElement: (firing) => void fired.push([firing, readOfA]) }, { uid: 'observe' }),
        collect<never>().sink({ uid: 'out' }),
      );
      await job.start().done;
      return fired;
    };

    it('with idleTimeout is marked idle and does not hold windows back', async () => {
      const fired = await run(30);
      expect(fired.map(([firing]) => firing.slice(0, 3))).toEqual([
        ['a', 0, 10],
        ['a', 100, 10],
        ['a', 200, 10],
      ]);
      // [0,100) and [100,200) fire while a is being read, at a's watermark (its largest timestamp - 1).
      for (const [[, start, , watermark], read] of fired.slice(0, 2)) {
        expect(read).toBeLessThan(30);
        expect(watermark).toBeGreaterThanOrEqual(start + 99);
        expect(watermark).toBeLessThan(290);
      }
    });

    it('without idleTimeout holds every window back until it ends (Flink without withIdleness)', async () => {
      const fired = await run(undefined);
      expect(fired.map(([firing, read]) => [...firing.slice(0, 3), read])).toEqual([
        ['a', 0, 10, 30],
        ['a', 100, 10, 30],
        ['a', 200, 10, 30],
      ]);
    });
  });

  it('saves each split\'s event time with its offset: a restore mid-stream fires every window once, at the same watermark', async () => {
    // b runs ahead (t = 0, 20, …, 500) and then has nothing more, open; a (t = 0, 10, …, 590) catches up after the
    // checkpoint, taken before a's record 30: windows of a from [200,300) on fire only because b's watermark (499)
    // was restored, not at the end of input.
    const parts = {
      a: Array.from({ length: 60 }, (_, i) => ev('a', i * 10)),
      b: Array.from({ length: 26 }, (_, i) => ev('b', i * 20)),
    };
    const strategy: SourceWatermarkOptions<Ev> = { timestamp: (e) => e.t, interval: 0 };
    const plain = buildJob(partsSource(parts, { waiting: ['b'] }), strategy);
    await plain.job.start().done;
    const uninterrupted = plain.out.values;
    expect(byWindow(uninterrupted).filter(([k]) => k === 'a').map(([, start, , watermark]) => [start, watermark])).toEqual([
      [0, 99],
      [100, 199],
      [200, 299],
      [300, 399],
      [400, 499],
      [500, MAX],
    ]);

    // Checkpoint before a's record 30, cancel, restore (at `parallelism`) and run to the end.
    const restoredRun = async (parallelism: number) => {
      const storage: CheckpointStorage = memoryCheckpointStorage();
      const reached = deferred();
      const gate = deferred();
      const before = (id: string, i: number) => (id === 'a' && i === 30 ? (reached.resolve(), gate.promise) : undefined);
      const first = buildJob(partsSource(parts, { waiting: ['b'], before }), strategy, { checkpoints: { storage } });
      const running = first.job.start();
      await reached.promise;
      await running.checkpoint();
      await running.cancel();
      const second = buildJob(partsSource(parts, { waiting: ['b'] }), strategy, { checkpoints: { storage } }, parallelism);
      await second.job.start({ restore: 'latest' }).done;
      return [...first.out.values, ...second.out.values];
    };
    expect(await restoredRun(1)).toEqual(uninterrupted);
    // At parallelism 2 each split is read by its own subtask: its event time follows it by split id.
    expect(byWindow(await restoredRun(2))).toEqual(byWindow(uninterrupted));
  });
});
