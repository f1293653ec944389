// The record path of every operator instance runs on code compiled for it alone (src/core/ownCopy.ts), so that V8's
// feedback is not shared between jobs. Jobs in one process must not see one another through those copies, a throw
// must still name its operator, and where the platform forbids compiling code at run time (a Content-Security-Policy
// without 'unsafe-eval') jobs must run the same on the shared code.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ownCopy } from '../../src/core/ownCopy';
import { UserFunctionError, aggregate, assignTimestamps, collect, createJob, filter, fromArray, keyBy, map, tumbling, window, type AggregateFunction } from 'weir';

interface Reading {
  readonly sensor: string;
  readonly at: number;
  readonly value: number;
}

const readings: Reading[] = Array.from({ length: 60 }, (_, i) => ({ sensor: `s${i % 3}`, at: i * 100, value: i }));

const sum: AggregateFunction<Reading, number, number> = {
  createAccumulator: () => 0,
  add: (r, total) => total + r.value,
  getResult: (total) => total,
  merge: (a, b) => a + b,
};

/** Two jobs of one shape with different functions, run at once: sums per sensor and second, and the readings kept. */
async function twoJobs(): Promise<{ sums: readonly [string, number][]; kept: readonly number[] }> {
  const sums = collect<[string, number]>();
  const kept = collect<number>();
  const first = createJob({ name: 'own-copy-sums' });
  const stamped = first.source(fromArray(readings), { uid: 'in' }).pipe(assignTimestamps((r: Reading) => r.at, { interval: 0 }));
  stamped.pipe(
    filter((r: Reading) => r.value % 2 === 0),
    keyBy((r: Reading) => r.sensor),
    window(tumbling(1_000)),
    aggregate<Reading, number, number, [string, number]>(sum, { process: { process: (key, _ctx, [total], out) => out.emit([String(key), total!]) } }),
    sums.sink({ uid: 'sums' }),
  );
  stamped.pipe(
    map((r: Reading) => r.value),
    kept.sink({ uid: 'all-values' }),
  );
  const second = createJob({ name: 'own-copy-odd' });
  const odd = collect<number>();
  second
    .source(fromArray(readings), { uid: 'in' })
    .pipe(assignTimestamps((r: Reading) => r.at + 1, { interval: 0 }), filter((r: Reading) => r.value % 2 === 1), map((r: Reading) => -r.value), odd.sink({ uid: 'odd' }));
  await Promise.all([first.start().done, second.start().done]);
  expect(odd.values).toEqual(readings.filter((r) => r.value % 2 === 1).map((r) => -r.value));
  return { sums: sums.values, kept: kept.values };
}

const expectedSums = (): [string, number][] => {
  const totals = new Map<string, number>();
  for (const r of readings) {
    if (r.value % 2 !== 0) continue;
    const id = `${Math.floor(r.at / 1_000)} ${r.sensor}`;
    totals.set(id, (totals.get(id) ?? 0) + r.value);
  }
  return [...totals].map(([id, total]) => [id.split(' ')[1]!, total]);
};

describe('operators on code of their own', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('are made by a factory compiled anew, which behaves as the factory', () => {
    const adder = (n: number) => (x: number) => x + n;
    const copy = ownCopy(adder);
    expect(copy).not.toBe(adder);
    expect(copy(2)(3)).toBe(5);
    expect(ownCopy(adder)).not.toBe(copy);
  });

  it('keep jobs apart: each runs its own functions, with the results of each alone', async () => {
    const { sums, kept } = await twoJobs();
    expect(sums).toEqual(expectedSums());
    expect(kept).toEqual(readings.map((r) => r.value));
  });

  it('fail the job naming the operator whose function threw', async () => {
    const job = createJob({ name: 'own-copy-throw' });
    job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(
      keyBy((n: number) => n),
      filter((n: number) => {
        if (n === 2) throw new Error('two');
        return true;
      }, { uid: 'throws-on-2' }),
      collect<number>().sink(),
    );
    const error = await job.start().done.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(UserFunctionError);
    expect((error as UserFunctionError).uid).toBe('throws-on-2');
  });

  it('run the same where compiling code at run time is refused (a CSP without unsafe-eval)', async () => {
    vi.stubGlobal(
      'Function',
      class {
        constructor() {
          throw new EvalError("Refused to evaluate a string as JavaScript because 'unsafe-eval' is not an allowed source");
        }
      },
    );
    const { sums, kept } = await twoJobs();
    expect(sums).toEqual(expectedSums());
    expect(kept).toEqual(readings.map((r) => r.value));
  });
});
