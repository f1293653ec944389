import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { NoKeyedContextError, keyBy, process, valueState, type Flow, type ProcessFunction } from 'weir';
import { advanceTo } from '../support/virtualTime';
import { buildJob, ev, runOut, scriptedSource, timestamps, type Ev } from '../windows/fixtures';

const keyed = (fn: ProcessFunction<Ev, string>) => (flow: Flow<Ev>) => flow.pipe(timestamps(), keyBy((e: Ev) => e.k), process(fn, { uid: 'timers' }));

/** Reports each timer firing as `key domain time ts=<output timestamp>`. */
const report: ProcessFunction<Ev, string>['onTimer'] = (time, ctx, out) => out.emit(`${String(ctx.key)} ${ctx.timeDomain} ${time} ts=${ctx.timestamp}`);

describe('event-time timers of a keyed process function', () => {
  it('fire with their key when the watermark reaches them, in time order, output stamped with the timer time', async () => {
    const out = await runOut(
      [ev('a', 1), ev('b', 2), ev('a', 5), ev('c', 30)],
      keyed({
        onElement(e, ctx, o) {
          ctx.timers.registerEventTimeTimer(e.t + 10);
          o.emit(`${e.k}@${e.t} wm=${ctx.timers.currentWatermark()}`);
        },
        onTimer: report,
      }),
    );
    expect(out).toEqual([
      `a@1 wm=${Number.NEGATIVE_INFINITY}`,
      'b@2 wm=0',
      'a@5 wm=1',
      'c@30 wm=4',
      'a event-time 11 ts=11',
      'b event-time 12 ts=12',
      'a event-time 15 ts=15',
      // end of input: the final watermark fires every pending event-time timer
      'c event-time 40 ts=40',
    ]);
  });

  it('are deduplicated per key and time, and can be deleted', async () => {
    const out = await runOut(
      [ev('a', 1), ev('a', 2), ev('b', 3), ev('b', 4), ev('c', 5)],
      keyed({
        onElement(e, ctx) {
          ctx.timers.registerEventTimeTimer(100);
          if (e.k === 'b') ctx.timers.registerEventTimeTimer(200 + e.t);
          if (e.t === 4) ctx.timers.deleteEventTimeTimer(203);
          if (e.k === 'c') ctx.timers.deleteEventTimeTimer(100);
        },
        onTimer: report,
      }),
    );
    expect(out).toEqual(['a event-time 100 ts=100', 'b event-time 100 ts=100', 'b event-time 204 ts=204']);
  });

  it('registered at or before the current watermark fire with the next watermark, as in Flink', async () => {
    const out = await runOut(
      [ev('a', 10), ev('a', 11), ev('a', 12)],
      keyed({
        onElement(e, ctx, o) {
          if (e.t === 11) ctx.timers.registerEventTimeTimer(5);
          o.emit(`a@${e.t}`);
        },
        onTimer: report,
      }),
    );
    expect(out).toEqual(['a@10', 'a@11', 'a event-time 5 ts=5', 'a@12']);
  });

  it('can keep state and register more timers from onTimer', async () => {
    const fired = valueState<number>('fired', { default: 0 });
    const out = await runOut(
      [ev('a', 0), ev('z', 100)],
      keyed({
        onElement(e, ctx) {
          if (e.k === 'a') ctx.timers.registerEventTimeTimer(10);
        },
        onTimer(time, ctx, o) {
          const n = ctx.state(fired).value()! + 1;
          ctx.state(fired).update(n);
          o.emit(`${String(ctx.key)} #${n} at ${time}`);
          if (n < 3) ctx.timers.registerEventTimeTimer(time + 10);
        },
      }),
    );
    expect(out).toEqual(['a #1 at 10', 'a #2 at 20', 'a #3 at 30']);
  });

  it('a throw in onTimer fails the job with that error', async () => {
    const promise = runOut(
      [ev('a', 1), ev('a', 20)],
      keyed({
        onElement: (_e, ctx) => ctx.timers.registerEventTimeTimer(5),
        onTimer() {
          throw new Error('timer failed');
        },
      }),
    );
    await expect(promise).rejects.toThrow('timer failed');
  });

  it('need a keyed flow', async () => {
    const promise = runOut([ev('a', 1)], (flow) =>
      flow.pipe(process<Ev, never>({ onElement: (_e, ctx) => ctx.timers.registerEventTimeTimer(5) })),
    );
    await expect(promise).rejects.toThrow(NoKeyedContextError);
  });
});

describe('processing-time timers on a virtual clock', () => {
  it('fire when the clock reaches them, with timeDomain processing-time; deleted ones do not', async () => {
    const scheduler = new VirtualTimeScheduler();
    const arrivals = [0, 3, 6, 50];
    const records = [ev('a', 0), ev('b', 0), ev('a', 0)];
    const { job, outs } = buildJob(
      scriptedSource(records, (i) => advanceTo(scheduler, arrivals[i]!)),
      (flow) =>
        flow.pipe(
          keyBy((e: Ev) => e.k),
          process<Ev, string>({
            onElement(e, ctx, o) {
              const now = ctx.timers.currentProcessingTime();
              o.emit(`${e.k} at ${now}`);
              ctx.timers.registerProcessingTimeTimer(now + 10);
              ctx.timers.registerProcessingTimeTimer(now + 10); // deduplicated
              if (now === 6) ctx.timers.deleteProcessingTimeTimer(10);
            },
            onTimer: report,
          }, { uid: 'timers' }),
        ),
      { scheduler },
    );
    await job.start().done;
    // a's timer at 10 was deleted at 6; b's at 13 and a's at 16 fire as the clock moves to 50 before the end of input.
    expect(outs.out!.values).toEqual(['a at 0', 'b at 3', 'a at 6', 'b processing-time 13 ts=13', 'a processing-time 16 ts=16']);
  });

  it('do not fire at the end of input: only event time ends there (Flink drops pending processing-time timers of a finished task)', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { job, outs } = buildJob(
      scriptedSource([ev('a', 0)]),
      (flow) =>
        flow.pipe(
          keyBy((e: Ev) => e.k),
          process<Ev, string>({ onElement: (_e, ctx) => ctx.timers.registerProcessingTimeTimer(1_000), onTimer: report }, { uid: 'timers' }),
        ),
      { scheduler },
    );
    await job.start().done;
    expect(outs.out!.values).toEqual([]);
  });
});
