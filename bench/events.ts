// The keyed events of the benches and the source that replays them. No node: imports: the browser bench page
// (bench/browser/page.ts) generates the same events.
import type { Source } from 'weir';

/** Events of the keyed benchmarks: string keys like `k123`. */
export interface KeyedEvent {
  readonly key: string;
  readonly n: number;
}

/** `count` events over `keyCount` keys, in a fixed pseudo-random key order (the same on every run). */
export function makeEvents(count: number, keyCount: number): KeyedEvent[] {
  const keys = Array.from({ length: keyCount }, (_, i) => `k${i}`);
  const events: KeyedEvent[] = new Array(count);
  let seed = 0x9e3779b9;
  for (let i = 0; i < count; i++) {
    // xorshift32: cheap, deterministic, spread over every key.
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    events[i] = { key: keys[(seed >>> 0) % keyCount]!, n: i & 15 };
  }
  // Every key at least once, so that the state ends up holding all of them.
  for (let i = 0; i < Math.min(keyCount, count); i++) events[i] = { key: keys[i]!, n: 1 };
  return events;
}

/** The keyed sum of the benches: adds `n`, keeps the key. */
export const addEvents = (a: KeyedEvent, b: KeyedEvent): KeyedEvent => ({ key: a.key, n: a.n + b.n });

/**
 * A replayable source reading `events` over and over, `total` records in all: long runs without holding tens of
 * millions of records in memory. Reads cost what `fromArray`'s do. Each read hands out `share` of its `max` (1 = full
 * chunks): an input that delivers less per chunk than another is the skew barrier alignment has to absorb.
 */
export function repeating(events: readonly KeyedEvent[], total: number, share = 1): Source<KeyedEvent> {
  return {
    name: `repeating(${events.length} records, ${total} in all)`,
    replayable: true,
    open({ restoredOffset }) {
      let index = typeof restoredOffset === 'number' ? restoredOffset : 0;
      return {
        read(max) {
          if (index >= total) return null;
          const at = index % events.length;
          const chunk = events.slice(at, Math.min(at + Math.max(1, Math.floor(max * share)), events.length, at + total - index));
          index += chunk.length;
          return chunk;
        },
        offset: () => index,
      };
    },
  };
}
