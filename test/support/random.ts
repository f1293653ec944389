// A seeded PRNG for the tests that pick random points (kill schedules, failure points, fuzz mutations, generated
// events): the same sequence on every run, so a failure replays from its seed. No node: imports, so that tests of
// both projects can use it.

/** A source of numbers in [0, 1), like `Math.random`. */
export type Random = () => number;

/** mulberry32: a tiny seeded PRNG, so that a failing kill schedule, failure point or fuzz case can be replayed. */
export function random(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
