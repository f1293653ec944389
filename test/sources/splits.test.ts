import { describe, expect, it } from 'vitest';
import { collect, createJob, fromArrays, keyBy, memoryCheckpointStorage, reduce, type JobOptions, type Source } from 'weir';

interface Rec {
  key: string;
  n: number;
}

function sumJob(source: Source<Rec>, parallelism: number, options: Partial<JobOptions> = {}) {
  const job = createJob({ name: 'splits', chunkSize: 3, ...options });
  const out = collect<Rec>();
  job
    .source(source, { uid: 'in', parallelism })
    .pipe(keyBy((r: Rec) => r.key), reduce((a: Rec, b: Rec) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }), out.sink({ uid: 'out' }));
  return { job, out };
}

const finals = (values: readonly Rec[]) => Object.fromEntries(values.map((r) => [r.key, r.n]));

describe('fromArrays', () => {
  const parts = [
    Array.from({ length: 10 }, (_, i) => ({ key: 'a', n: i })),
    Array.from({ length: 7 }, (_, i) => ({ key: 'b', n: 100 + i })),
    Array.from({ length: 4 }, (_, i) => ({ key: 'c', n: 1000 + i })),
  ];
  it.each([1, 2, 3, 4])('gives the same sums at parallelism %i', async (parallelism) => {
    const { job, out } = sumJob(fromArrays(parts), parallelism, { checkpoints: { storage: memoryCheckpointStorage(), interval: 1 } });
    await job.start().done;
    expect(finals(out.values)).toEqual({ a: 45, b: 721, c: 4006 });
  });
});
