// The development-mode check that RxJS operators in a pipeline keep no state in their closures: no checkpoint holds
// such state, so a restore would silently lose it. `uncheckpointed` accepts the loss; NODE_ENV=production skips it.
import { bufferCount, distinct, filter as rxFilter, map as rxMap, mergeMap, of, pairwise, scan, startWith, take, type OperatorFunction } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { JobDefinitionError, UncheckpointedStateError, collect, createJob, fromArray, memoryCheckpointStorage, uncheckpointed, type Flow } from 'weir';
import { harness } from 'weir/testing';

/** Runs `fromArray(records) → build → collect` as a fresh job (restarts allowed) and returns what was collected. */
async function run<T, R>(records: T[], build: (flow: Flow<T>) => Flow<R>): Promise<R[]> {
  const job = createJob({ name: 'closure-state', checkpoints: { storage: memoryCheckpointStorage(), interval: 60_000 }, restart: { strategy: 'fixed-delay', attempts: 2, delay: 0 } });
  const out = collect<R>();
  build(job.source(fromArray(records), { uid: 'in' })).pipe(out.sink());
  const running = job.start();
  try {
    await running.done;
  } finally {
    // A definition error is not retried.
    expect(running.restarts).toBe(0);
  }
  return [...out.values];
}

const numbers = Array.from({ length: 10 }, (_, i) => i + 1);

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('closure state of RxJS operators', () => {
  it.each<[string, OperatorFunction<number, unknown>, string]>([
    ['scan', scan((sum: number, n: number) => sum + n, 0), 'fold or reduce for scan'],
    ['bufferCount', bufferCount<number>(3), 'window(countWindow(n)) for bufferCount'],
    ['pairwise', pairwise<number>(), 'keyed state in process for distinct, pairwise and take'],
    ['take', take<number>(3), 'keyed state in process for distinct, pairwise and take'],
    ['startWith', startWith<number>(0), 'uncheckpointed(…)'],
    ['map with its index', rxMap((n: number, index: number) => n * index), 'uncheckpointed(…)'],
  ])('fails a job whose %s keeps state across records with UncheckpointedStateError, not retried', async (_name, operator, way) => {
    const error = await run(numbers, (flow) => flow.pipe(operator)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UncheckpointedStateError);
    expect(error).toBeInstanceOf(JobDefinitionError);
    expect(String(error)).toContain("operator 'rxjs-1' (rxjs) of job 'closure-state' keeps state in its closure that no checkpoint holds");
    expect(String(error)).toContain(way);
  });

  it('names the record and both outputs, and fails before the differing output reaches downstream', async () => {
    const h = await harness((input: Flow<number>) => input.pipe(scan((sum: number, n: number) => sum + n, 0)));
    h.push(5);
    expect(() => h.push(7)).toThrow('for the record 7 it emitted [12], a fresh instance given only that record [7]');
    expect(h.values()).toEqual([5]);
  });

  it('finds distinct dropping a record it saw before', async () => {
    await expect(run([1, 2, 1], (flow) => flow.pipe(distinct()))).rejects.toThrow(UncheckpointedStateError);
  });

  it('passes operators whose output for a record depends on that record alone', async () => {
    const out = await run(numbers, (flow) =>
      flow.pipe(
        rxFilter((n) => n % 2 === 0),
        mergeMap((n) => of({ n, square: n * n })),
        rxMap(({ n, square }) => [n, square]),
      ),
    );
    expect(out).toEqual([[2, 4], [4, 16], [6, 36], [8, 64], [10, 100]]);
  });

  it('checks the first 64 records, then one in 1,024: state that shows late is found at a sampled record', async () => {
    // Negates records from its 1,025th on: a fresh instance (index 0) never does.
    const late = () => rxMap((n: number, index: number) => (index < 1024 ? n : -n));
    const records = (count: number) => Array.from({ length: count }, (_, i) => i);
    // Records 1,025 to 2,047 are not sampled; the 2,048th is.
    expect(await run(records(2047), (flow) => flow.pipe(late()))).toHaveLength(2047);
    await expect(run(records(2048), (flow) => flow.pipe(late()))).rejects.toThrow('for the record 2047 it emitted [-2047], a fresh instance given only that record [2047]');
  });

  it('checks one in 16,384 records past the 65,536th: state that shows even later is still found', async () => {
    const later = () => rxMap((n: number, index: number) => (index < 65_536 ? n : -n));
    const records = (count: number) => Array.from({ length: count }, (_, i) => i);
    // Records 65,537 to 81,919 are not sampled; the 81,920th (65,536 + 16,384) is.
    expect(await run(records(81_919), (flow) => flow.pipe(later()))).toHaveLength(81_919);
    await expect(run(records(81_920), (flow) => flow.pipe(later()))).rejects.toThrow('for the record 81919 it emitted [-81919]');
  });

  it('lets uncheckpointed(…) operators run, their state restarting empty after a restore', async () => {
    const fragment = (input: Flow<number>) => input.pipe(uncheckpointed(scan((sum: number, n: number) => sum + n, 0)));
    const h = await harness(fragment);
    h.push(1);
    h.push(2);
    const snapshot = await h.snapshot();
    expect(h.values()).toEqual([1, 3]);
    const restored = await h.restore(snapshot);
    restored.push(3);
    expect(restored.values()).toEqual([3]);
  });

  it('skips the check when NODE_ENV is production', async () => {
    vi.stubEnv('NODE_ENV', 'production');
    expect(await run([1, 2, 3], (flow) => flow.pipe(scan((sum: number, n: number) => sum + n, 0)))).toEqual([1, 3, 6]);
    let calls = 0;
    await run([1, 2, 3], (flow) =>
      flow.pipe(
        rxMap((n) => {
          calls++;
          return n;
        }),
      ),
    );
    expect(calls).toBe(3);
  });

  it('runs the user functions of a checked record a second time in development mode, as React StrictMode does', async () => {
    let calls = 0;
    await run([1, 2, 3], (flow) =>
      flow.pipe(
        rxMap((n) => {
          calls++;
          return n;
        }),
      ),
    );
    expect(calls).toBe(6);
  });
});
