import { describe, expect, it } from 'vitest';
import { aggregate, eventTimeTrigger, keyBy, lateData, process, reduce, sliding, tumbling, window, type AggregateFunction, type Flow, type WindowAssigner } from 'weir';
import { harness, record } from 'weir/testing';
import { random } from '../support/random';
import { ev, run, runThreeWays, stamped, timestamps, type Ev } from './fixtures';

// Sliced event-time windows with the default trigger fire from a sweep of window ends rather than a timer per key and
// window, and combine a key's records in memory until a snapshot: what they emit, save and restore must not show it.

const total = (a: Ev, b: Ev): Ev => ({ k: a.k, t: Math.min(a.t, b.t), v: a.v + b.v });

const count: AggregateFunction<Ev, number, number> = { createAccumulator: () => 0, add: (_e, n) => n + 1, getResult: (n) => n, merge: (a, b) => a + b };

/** Many keys, each with a burst of records in one or two slices (as auctions get their bids), in event-time order up to `lag`. */
function bursts(rand: () => number, keys: number, lag: number): Ev[] {
  const events: Ev[] = [];
  for (let k = 0; k < keys; k++) {
    const at = k * 3 + Math.floor(rand() * 6);
    const n = 1 + Math.floor(rand() * 6);
    for (let i = 0; i < n; i++) events.push(ev(`k${k}`, at + Math.floor(rand() * 7), 1 + Math.floor(rand() * 9)));
  }
  events.sort((a, b) => a.t - b.t);
  // Some records a little out of order, within the watermark's lag.
  for (let i = 1; i < events.length; i++) if (rand() < 0.2) [events[i - 1], events[i]] = [events[i]!, events[i - 1]!];
  return events.map((e) => ({ ...e, t: e.t - (rand() < 0.1 ? Math.floor(rand() * lag) : 0) }));
}

/** What each key's windows hold, computed window by window from the records (no lateness: records before the watermark are dropped). */
function referenceCounts(events: readonly Ev[], size: number, slide: number, lag: number): string[] {
  const out: string[] = [];
  const counts = new Map<string, number>();
  let watermark = Number.NEGATIVE_INFINITY;
  for (const e of events) {
    // A record is dropped when every window holding it has fired: its last window ends at or before the watermark + 1.
    const lastStart = e.t - (((e.t % slide) + slide) % slide);
    if (lastStart + size - 1 > watermark) {
      for (let start = lastStart; start > e.t - size; start -= slide) {
        if (start + size - 1 <= watermark) continue;
        const id = `${e.k} ${start}`;
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
    watermark = Math.max(watermark, e.t - lag - 1);
  }
  for (const [id, n] of counts) out.push(`${id} ${n}`);
  return out.sort();
}

const counted = (assigner: WindowAssigner, lag: number, perWindow = false) => (flow: Flow<Ev>) =>
  flow.pipe(
    timestamps(lag),
    keyBy((e: Ev) => e.k),
    window(assigner, perWindow ? { trigger: eventTimeTrigger() } : {}),
    aggregate<Ev, number, number, string>(count, { uid: 'counts', process: { process: (key, ctx, [n], out) => out.emit(`${String(key)} ${ctx.window.start} ${n}`) } }),
  );

describe('windows fired by a sweep of window ends', () => {
  it('give each key and window what a window-by-window count of the records gives, across a checkpoint and a restore', async () => {
    const lag = 4;
    const events = bursts(random(11), 400, lag);
    const reference = referenceCounts(events, 20, 5, lag);
    const { uninterrupted, restored, restarted } = await runThreeWays(events, counted(sliding(20, 5), lag), { at: Math.floor(events.length / 2) });
    expect(reference.length).toBeGreaterThan(1000);
    expect([...(uninterrupted.out as string[])].sort()).toEqual(reference);
    expect(restored).toEqual(uninterrupted);
    expect(restarted).toEqual(uninterrupted);
  });

  it('give tumbling windows what windows fired by timers (a custom trigger) give', async () => {
    const events = bursts(random(12), 300, 3);
    const swept = await run(events, counted(tumbling(10), 3));
    const timed = await run(events, counted(tumbling(10), 3, true));
    expect(swept.out!.length).toBeGreaterThan(300);
    // Results of different keys at one instant may come in another order.
    expect([...swept.out!].sort()).toEqual([...timed.out!].sort());
  });

  it('save their firings as the timers a timer per key and window would be: a window\'s last instant, the window, the key', async () => {
    const windowed = (input: Flow<Ev>) => input.pipe(keyBy((e: Ev) => e.k), window(sliding(10, 5)), reduce(total, { uid: 'sums' }));
    const h = await harness(windowed);
    h.push(ev('a', 1, 1), 1);
    h.push(ev('b', 3, 10), 3);
    h.push(ev('a', 7, 100), 7);
    h.pushWatermark(4);
    expect(h.values()).toEqual([ev('a', 1, 1), ev('b', 3, 10)]);
    const snapshot = await h.snapshot();
    // A process function under the same uid restores the operator's timers and fires each saved one.
    const timers = await harness(
      (input: Flow<Ev>) =>
        input.pipe(
          keyBy((e: Ev) => e.k),
          process<Ev, string>({ onElement: () => undefined, onTimer: (time, ctx, out) => out.emit(`${String(ctx.key)} ${time}`) }, { uid: 'sums' }),
        ),
      { restore: snapshot, allowNonRestoredState: true },
    );
    timers.pushWatermark(20);
    // [0, 10) fires at 9 for a (its record at 7 is new in a slice of it) and b (the firing at 4 shares its slice);
    // [5, 15) has no timer yet: firing [0, 10) makes it due, as a timer registered then would.
    expect(timers.values()).toEqual(['a 9', 'b 9']);
    // And the windows restored from it fire what they hold.
    const restored = await harness(windowed, { restore: snapshot });
    restored.pushWatermark(20);
    expect(restored.output()).toEqual([record(ev('a', 1, 101), 9), record(ev('b', 3, 10), 9), record(ev('a', 7, 100), 14)]);
  });

  it('fire again for late records within the allowed lateness, and drop them past it, as windows fired by timers do', async () => {
    const rand = random(13);
    const events = bursts(rand, 150, 12).map((e) => (rand() < 0.1 ? { ...e, t: e.t - 15 } : e));
    const pipeline = (perWindow: boolean) => (flow: Flow<Ev>) => {
      const sums = flow.pipe(timestamps(2), keyBy((e: Ev) => e.k), window(sliding(12, 4), perWindow ? { allowedLateness: 9, trigger: eventTimeTrigger() } : { allowedLateness: 9 }), reduce(total, { uid: 'sums' }));
      return { sums: sums.pipe(stamped()), late: sums.pipe(lateData<Ev>()) };
    };
    const swept = await run(events, pipeline(false));
    const timed = await run(events, pipeline(true));
    expect(swept.late!.length).toBeGreaterThan(0);
    const sorted = (values: unknown[]) => values.map((v) => JSON.stringify(v)).sort();
    expect(sorted(swept.sums!)).toEqual(sorted(timed.sums!));
    expect(sorted(swept.late!)).toEqual(sorted(timed.late!));
  });

  it('show records combined in memory to harness.state mid-window, and keep counting after the read', async () => {
    // The slice [5, 10) of sliding(10, 5), the window [0, 10) of tumbling(10).
    for (const [assigner, id, results] of [[sliding(10, 5), '5:10', [7, 7]], [tumbling(10), '0:10', [7]]] as const) {
      const h = await harness((input: Flow<Ev>) => input.pipe(keyBy((e: Ev) => e.k), window(assigner), reduce(total, { uid: 'sums' })));
      h.push(ev('a', 6, 1), 6);
      h.push(ev('a', 7, 2), 7);
      expect(h.state('sums', 'window-contents', 'a', id)).toEqual(ev('a', 6, 3));
      h.push(ev('a', 8, 4), 8);
      expect(h.state('sums', 'window-contents', 'a', id)).toEqual(ev('a', 6, 7));
      h.pushWatermark(20);
      expect(h.values().map((e) => e.v)).toEqual(results);
      expect(h.state('sums', 'window-contents', 'a', id)).toBeUndefined();
    }
  });
});
