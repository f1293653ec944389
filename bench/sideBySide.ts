// The side-by-side rounds every bench measures with, in Node (bench/measure.ts) and in the browser page
// (bench/browser/page.ts) alike: no node: imports here.

/** A sink callback that drops what it gets: the measured sides pay for their work, not for keeping results. */
export const noop = (): void => undefined;

/** Events per second of `count` events processed in `ms` milliseconds. */
export function perSecond(count: number, ms: number): number {
  return count / (ms / 1000);
}

/**
 * Runs every side `rounds` times after one warm-up round, alternating their order each round, and keeps each
 * side's best figure (`max` for throughputs, `min` for durations). `settle` runs before every run of a side (a full
 * GC, so that one side's garbage is not collected on the other side's clock).
 */
export async function sideBySide<K extends string>(
  sides: Record<K, () => number | Promise<number>>,
  options: { rounds: number; best: 'max' | 'min'; warmup?: boolean; settle: () => void },
): Promise<Record<K, number>> {
  const names = Object.keys(sides) as K[];
  const best = {} as Record<K, number>;
  const better = (a: number, b: number) => (options.best === 'max' ? a > b : a < b);
  if (options.warmup ?? true) {
    for (const name of names) {
      options.settle();
      await sides[name]();
    }
  }
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      options.settle();
      const figure = await sides[name]();
      if (best[name] === undefined || better(figure, best[name])) best[name] = figure;
    }
  }
  return best;
}
