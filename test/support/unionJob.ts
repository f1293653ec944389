// Fixtures of the multi-input tests: sources whose reads are scripted, so that the interleaving of the inputs and
// the place of each barrier are exact, and the two-input union job most tests run.
import { collect, createJob, keyBy, reduce, unionWith, type Collector, type JobOptions, type Source } from 'weir';

export interface Rec {
  key: string;
  n: number;
}

/** `count` records over `keys` keys; `n` starts at `base`, so that per-key sums tell the inputs and duplicates apart. */
export function records(count: number, keys: number, base = 0): Rec[] {
  return Array.from({ length: count }, (_, i) => ({ key: `k${i % keys}`, n: base + i }));
}

/**
 * A replayable source over `items` (offset = index of the next record) that calls `onRead(r)` on its `r`-th read
 * (0-based, counted per attempt) before handing out the chunk. When `onRead` returns a promise, the read waits for it.
 * A sync source emits one chunk per macrotask; two of them alternate chunk by chunk. A checkpoint triggered inside
 * `onRead` puts this source's barrier right after the chunk being read, and, when `onRead` returns a promise, holds it
 * back until that promise resolves: a slow input.
 */
export function scripted<T>(items: readonly T[], onRead?: (read: number) => void | Promise<void>): Source<T> {
  return {
    name: `scripted(${items.length})`,
    replayable: true,
    open({ restoredOffset }) {
      let index = typeof restoredOffset === 'number' ? restoredOffset : 0;
      let reads = 0;
      const next = (max: number) => {
        if (index >= items.length) return null;
        const chunk = items.slice(index, index + max);
        index += chunk.length;
        return chunk;
      };
      return {
        read(max) {
          const hook = onRead?.(reads++);
          return hook instanceof Promise ? hook.then(() => next(max)) : next(max);
        },
        offset: () => index,
      };
    },
  };
}

/** `union(a, b) → keyBy(key) → reduce sum`, uids 'a', 'b', 'union', 'sum', 'out'. */
export function unionSumJob(a: Source<Rec>, b: Source<Rec>, options: Partial<JobOptions> = {}, out: Collector<Rec> = collect<Rec>()) {
  const job = createJob({ chunkSize: 4, ...options, name: options.name ?? 'union-sum' });
  unionWith({ uid: 'union' }, job.source(a, { uid: 'a' }), job.source(b, { uid: 'b' })).pipe(
    keyBy((r: Rec) => r.key),
    reduce((x: Rec, y: Rec) => ({ key: x.key, n: x.n + y.n }), { uid: 'sum' }),
    out.sink({ uid: 'out' }),
  );
  return { job, out };
}

/** The last value per key of a keyed rolling output: the final state. */
export function finalByKey<T>(values: readonly T[], keyOf: (value: T) => string): Record<string, T> {
  const result: Record<string, T> = {};
  for (const value of values) result[keyOf(value)] = value;
  return result;
}

/** Sums of `n` per key: what a failure-free keyed sum ends with. */
export function sumsOf(...inputs: (readonly Rec[])[]): Record<string, Rec> {
  const result: Record<string, Rec> = {};
  for (const input of inputs) for (const { key, n } of input) result[key] = { key, n: (result[key]?.n ?? 0) + n };
  return result;
}

/** Lets pending macrotasks (source chunks, snapshot persistence, storage writes) run. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Resolves once `condition()` holds, checking after every macrotask (fails the test after `rounds` of them). */
export async function until(condition: () => boolean, rounds = 10_000): Promise<void> {
  for (let i = 0; !condition(); i++) {
    if (i === rounds) throw new Error('condition not reached');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
