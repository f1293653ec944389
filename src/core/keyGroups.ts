import type { Key, KeyGroupRange } from './types.js';

/** Flink's default number of key groups: the most parallel instances a keyed operator can ever be rescaled to. */
export const DEFAULT_MAX_PARALLELISM = 128;

/**
 * A stable 32-bit hash of a key: MurmurHash3 (x86, 32-bit) over the UTF-16 code units of the key's canonical
 * string, seeded 0. Strings hash as themselves; numbers, booleans and bigints as a one-letter type tag and their
 * decimal form, so `1` and `'1'` land in different groups. The result is the same on every process and platform,
 * which is what lets a checkpoint taken in Node restore in a browser, or at another parallelism.
 */
export function hashKey(key: Key): number {
  const text = typeof key === 'string' ? key : `\u0000${typeof key}:${String(key)}`;
  let h = 0;
  for (let i = 0; i < text.length; i++) {
    let k = text.charCodeAt(i);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  h ^= text.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** `keyGroup = hash(key) mod maxParallelism`, as in Flink's KeyGroupRangeAssignment. */
export function keyGroupOf(key: Key, maxParallelism: number): number {
  return hashKey(key) % maxParallelism;
}

/**
 * The parallel instance of `parallelism` that owns `key`: `floor(keyGroup·p/max)`, the inverse of `keyGroupRangeFor`
 * (Flink's computeOperatorIndexForKeyGroup).
 */
export function instanceOfKey(key: Key, parallelism: number, maxParallelism: number): number {
  return Math.floor((keyGroupOf(key, maxParallelism) * parallelism) / maxParallelism);
}

/**
 * The key groups parallel instance `index` of `parallelism` owns, by Flink's assignment:
 * `[ceil(index·max/p), floor(((index+1)·max − 1)/p)]`.
 */
export function keyGroupRangeFor(index: number, parallelism: number, maxParallelism: number): KeyGroupRange {
  return {
    start: Math.ceil((index * maxParallelism) / parallelism),
    end: Math.floor(((index + 1) * maxParallelism - 1) / parallelism),
  };
}
