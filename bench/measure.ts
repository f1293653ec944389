import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

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

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Full GC, so that one side's garbage is not collected on the other side's clock. */
export function settleHeap(): void {
  collectGarbage();
  collectGarbage();
}

export const noop = (): void => undefined;

/**
 * Runs every side `rounds` times after one warm-up round, alternating their order each round, and keeps each
 * side's best figure (`max` for throughputs, `min` for durations).
 */
export async function sideBySide<K extends string>(
  sides: Record<K, () => number | Promise<number>>,
  options: { rounds: number; best: 'max' | 'min'; warmup?: boolean },
): Promise<Record<K, number>> {
  const names = Object.keys(sides) as K[];
  const best = {} as Record<K, number>;
  const better = (a: number, b: number) => (options.best === 'max' ? a > b : a < b);
  if (options.warmup ?? true) {
    for (const name of names) {
      settleHeap();
      await sides[name]();
    }
  }
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      settleHeap();
      const figure = await sides[name]();
      if (best[name] === undefined || better(figure, best[name])) best[name] = figure;
    }
  }
  return best;
}

/** Events per second of `count` events processed in `ms` milliseconds. */
export function perSecond(count: number, ms: number): number {
  return count / (ms / 1000);
}
