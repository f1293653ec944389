import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  JobDefinitionError,
  MalformedRecordError,
  assignTimestamps,
  collect,
  count,
  countWindow,
  createJob,
  fromArray,
  globalWindow,
  keyBy,
  map,
  process,
  reduce,
  session,
  sliding,
  tumbling,
  window,
  type Flow,
} from 'weir';
import { advanceTo } from '../support/virtualTime';
import { buildJob, ev, runOut, scriptedSource, sum, type Ev } from '../windows/fixtures';

/** Reports, for each record, the watermark the keyed operator has seen before it, and the record's timestamp. */
const observe = () =>
  process<Ev, string>({ onElement: (e, ctx, out) => out.emit(`${e.k}@${ctx.timestamp} wm=${ctx.timers.currentWatermark()}`) }, { uid: 'observe' });

describe('assignTimestamps', () => {
  it('stamps records and emits max timestamp - outOfOrderness - 1 after each record that advances it (interval: 0)', async () => {
    const out = await runOut([ev('a', 5), ev('a', 3), ev('a', 10), ev('a', 8), ev('a', 12)], (flow) =>
      flow.pipe(assignTimestamps((e: Ev) => e.t, { outOfOrderness: 2, interval: 0 }), keyBy((e: Ev) => e.k), observe()),
    );
    expect(out).toEqual([`a@5 wm=${Number.NEGATIVE_INFINITY}`, 'a@3 wm=2', 'a@10 wm=2', 'a@8 wm=7', 'a@12 wm=7']);
  });

  it('forwards each watermark, in order, through chained operators that handle watermarks themselves', async () => {
    const relay = (uid: string) => process<Ev, Ev>({ onElement: (e, _ctx, out) => out.emit(e) }, { uid });
    const out = await runOut([ev('a', 5), ev('a', 3), ev('a', 10), ev('a', 8), ev('a', 12)], (flow) =>
      flow.pipe(assignTimestamps((e: Ev) => e.t, { outOfOrderness: 2, interval: 0 }), keyBy((e: Ev) => e.k), relay('relay-1'), keyBy((e: Ev) => e.k), relay('relay-2'), keyBy((e: Ev) => e.k), observe()),
    );
    expect(out).toEqual([`a@5 wm=${Number.NEGATIVE_INFINITY}`, 'a@3 wm=2', 'a@10 wm=2', 'a@8 wm=7', 'a@12 wm=7']);
  });

  it('emits watermarks periodically on the job scheduler with an interval', async () => {
    const scheduler = new VirtualTimeScheduler();
    const arrivals = [0, 5, 12, 15, 25, 40];
    const records = [ev('a', 100), ev('a', 110), ev('a', 120), ev('a', 130), ev('a', 140)];
    const { job, outs } = buildJob(
      scriptedSource(records, (i) => advanceTo(scheduler, arrivals[i]!)),
      (flow) => flow.pipe(assignTimestamps((e: Ev) => e.t, { interval: 10 }), keyBy((e: Ev) => e.k), observe()),
      { scheduler },
    );
    await job.start().done;
    // Ticks at 10 (after t=110), 20 (after t=130): watermarks 109 and 129.
    expect(outs.out!.values).toEqual([
      `a@100 wm=${Number.NEGATIVE_INFINITY}`,
      `a@110 wm=${Number.NEGATIVE_INFINITY}`,
      'a@120 wm=109',
      'a@130 wm=109',
      'a@140 wm=129',
    ]);
  });

  it('passes the end-of-input watermark, so every pending event-time window fires', async () => {
    const out = await runOut([ev('a', 1, 1), ev('b', 1_000_000, 2), ev('a', 5, 4)], (flow) =>
      flow.pipe(assignTimestamps((e: Ev) => e.t, { outOfOrderness: 10_000_000, interval: 0 }), keyBy((e: Ev) => e.k), window(tumbling(10)), reduce(sum, { uid: 'sum' })),
    );
    expect(out.map((e) => [e.k, e.v])).toEqual([
      ['a', 5],
      ['b', 2],
    ]);
  });

  it('fails the job with MalformedRecordError for a timestamp that is not a finite number', async () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '12', undefined]) {
      const job = createJob({ name: 'bad-timestamps' });
      job
        .source(fromArray([{ t: 1 }, { t: bad }]), { uid: 'in' })
        .pipe(
          assignTimestamps((r: { t: unknown }) => r.t as number, { interval: 0 }),
          keyBy(() => 'k'),
          window(tumbling(10)),
          reduce((a) => a, { uid: 'r' }),
          collect<{ t: unknown }>().sink({ uid: 'out' }),
        );
      const done = job.start().done;
      await expect(done).rejects.toThrow(MalformedRecordError);
      await expect(done).rejects.toThrow(/not a finite number/);
    }
  });
});

describe('bad definitions are rejected at pipe time with JobDefinitionError', () => {
  const flowOf = () => createJob({ name: 'bad' }).source(fromArray([ev('a', 1)]), { uid: 'in' });
  const timestamped = () => flowOf().pipe(assignTimestamps((e: Ev) => e.t));

  it('window sizes, slides, gaps, offsets and counts', () => {
    const bad: [string, () => unknown][] = [
      ['tumbling(0)', () => tumbling(0)],
      ['tumbling(-10)', () => tumbling(-10)],
      ['tumbling(NaN)', () => tumbling(Number.NaN)],
      ['tumbling(Infinity)', () => tumbling(Number.POSITIVE_INFINITY)],
      ['tumbling(10, 10)', () => tumbling(10, 10)],
      ['tumbling(10, NaN)', () => tumbling(10, Number.NaN)],
      ['sliding(10, 0)', () => sliding(10, 0)],
      ['sliding(0, 5)', () => sliding(0, 5)],
      ['sliding(10, -5)', () => sliding(10, -5)],
      ['sliding(10, 20)', () => sliding(10, 20)],
      ['sliding(10, 5, 5)', () => sliding(10, 5, 5)],
      ['session(0)', () => session(0)],
      ['session(-1)', () => session(-1)],
      ['countWindow(0)', () => countWindow(0)],
      ['countWindow(-2)', () => countWindow(-2)],
      ['countWindow(2.5)', () => countWindow(2.5)],
      ['countWindow(3, 4)', () => countWindow(3, 4)],
      ['countWindow(3, 0)', () => countWindow(3, 0)],
      ['count(0)', () => count(0)],
      ['tumbling(10, { time: "wall" })', () => tumbling(10, { time: 'wall' as never })],
    ];
    for (const [what, make] of bad) expect(make, what).toThrow(JobDefinitionError);
    expect(() => sliding(10, 20)).toThrow(/slide must not be larger than the size/);
    expect(() => tumbling(-10)).toThrow(/size must be a positive number of ms, got -10/);
  });

  it('a negative allowed lateness', () => {
    expect(() => timestamped().pipe(keyBy((e: Ev) => e.k), window(tumbling(10), { allowedLateness: -1 }))).toThrow(JobDefinitionError);
    expect(() => timestamped().pipe(keyBy((e: Ev) => e.k), window(tumbling(10), { allowedLateness: Number.NaN }))).toThrow(JobDefinitionError);
  });

  it('bad watermark options', () => {
    expect(() => assignTimestamps((e: Ev) => e.t, { outOfOrderness: -1 })).toThrow(JobDefinitionError);
    expect(() => assignTimestamps((e: Ev) => e.t, { interval: -1 })).toThrow(JobDefinitionError);
    expect(() => assignTimestamps((e: Ev) => e.t, { idleTimeout: 0 })).toThrow(JobDefinitionError);
  });

  it('a second watermark strategy on a flow that has one, also downstream of a window', () => {
    expect(() => timestamped().pipe(map((e: Ev) => e), assignTimestamps((e: Ev) => e.t))).toThrow(/already has timestamps/);
    const results = timestamped().pipe(keyBy((e: Ev) => e.k), window(tumbling(10)), reduce(sum, { uid: 'sum' }));
    expect(() => (results as Flow<Ev>).pipe(assignTimestamps((e: Ev) => e.t))).toThrow(JobDefinitionError);
  });

  it('an event-time window on a flow without timestamps; processing-time, global and count windows need none', () => {
    const keyed = () => flowOf().pipe(keyBy((e: Ev) => e.k));
    for (const assigner of [tumbling(10), sliding(10, 5), session(5)]) {
      expect(() => keyed().pipe(window(assigner))).toThrow(/no timestamps: put assignTimestamps/);
    }
    expect(() => keyed().pipe(window(tumbling(10, { time: 'processing-time' })))).not.toThrow();
    expect(() => keyed().pipe(window(globalWindow()))).not.toThrow();
    expect(() => keyed().pipe(window(countWindow(3)))).not.toThrow();
  });

  it('a window on a flow that is not keyed', () => {
    expect(() => timestamped().pipe(window(tumbling(10)) as never)).toThrow(/needs a keyed flow/);
  });
});
