import { describe, expect, it } from 'vitest';
import { generateEvents, MAX_LAG, type NexmarkEvent } from '../../bench/nexmark/generator';
import type { NexmarkQuery } from '../../bench/nexmark/nexmarkQuery';
import { nexmarkQueries } from '../../bench/nexmark/queries';

// 6000 events at 200 per second of event time: 30 s, three of Q7's and Q8's windows and fifteen of Q5's slides.
const events = generateEvents(6_000, { eventsPerSecond: 200 });

/** Each version's results as sorted canonical strings. */
async function resultsOf<R>(query: NexmarkQuery<R>, input: readonly NexmarkEvent[]) {
  const collect = () => {
    const out: string[] = [];
    return { out, sink: (r: R) => void out.push(query.canonical(r)) };
  };
  const weir = collect();
  const rx = collect();
  const loop = collect();
  await query.weir(input, weir.sink);
  await query.rx(input, rx.sink);
  query.loop(input, loop.sink);
  return { weir: weir.out.sort(), rx: rx.out.sort(), loop: loop.out.sort() };
}

/** The distinct window starts of windowed results (their first field). */
const windowsOf = (results: string[]) => new Set(results.map((r) => r.split(' ')[0])).size;

describe('nexmark bench: the generator', () => {
  it('is deterministic, keeps Nexmark proportions and lags at most MAX_LAG', () => {
    expect(generateEvents(1_000)).toEqual(generateEvents(1_000));
    const kinds = { person: 0, auction: 0, bid: 0 };
    for (const e of events) kinds[e.type]++;
    expect(kinds).toEqual({ person: 120, auction: 360, bid: 5_520 });
    let max = Number.NEGATIVE_INFINITY;
    for (const e of events) {
      expect(e.dateTime).toBeGreaterThanOrEqual(max - MAX_LAG);
      max = Math.max(max, e.dateTime);
    }
    expect(events.some((e, i) => i > 0 && e.dateTime < events[i - 1]!.dateTime)).toBe(true);
  });
});

describe('nexmark bench: weir, plain RxJS and a plain loop agree', () => {
  const minimumWindows: Record<string, number> = { q5: 10, q7: 3, q8: 2 };
  for (const query of nexmarkQueries) {
    it(query.name, async () => {
      const { weir, rx, loop } = await resultsOf(query, events);
      expect(weir.length).toBeGreaterThanOrEqual(3);
      expect(rx).toEqual(weir);
      expect(loop).toEqual(weir);
      const windows = minimumWindows[query.name];
      if (windows !== undefined) expect(windowsOf(weir)).toBeGreaterThanOrEqual(windows);
    });
  }
});
