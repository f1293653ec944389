// A user function's throw fails the job with a UserFunctionError naming the operator's uid and the job, whatever
// operator it was thrown in, with the thrown error as its cause; weir's own typed errors pass unchanged.
import { describe, expect, it } from 'vitest';
import {
  InvalidKeyError,
  UserFunctionError,
  aggregate,
  assignTimestamps,
  coProcess,
  connect,
  createJob,
  filter,
  forEach,
  fromArray,
  keyBy,
  map,
  process,
  reduce,
  tumbling,
  window,
  type Flow,
  type Job,
} from 'weir';
import { harness } from 'weir/testing';

class ParseError extends Error {}

const boom = new ParseError('bad record');
const throwOn3 = (n: number) => {
  if (n === 3) throw boom;
  return n;
};

async function failure(build: (job: Job, input: Flow<number>) => void): Promise<unknown> {
  const job = createJob({ name: 'failing' });
  build(job, job.source(fromArray([1, 2, 3, 4]), { uid: 'in' }));
  return job.start().done.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('a user function that throws', () => {
  it.each<[string, string, (job: Job, input: Flow<number>) => void]>([
    ['map', 'parse', (_job, input) => input.pipe(map(throwOn3, { uid: 'parse' }), forEach(() => undefined))],
    ['filter', 'keep', (_job, input) => input.pipe(filter((n: number) => throwOn3(n) > 0, { uid: 'keep' }), forEach(() => undefined))],
    ['a key selector', 'sum', (_job, input) => input.pipe(keyBy((n: number) => String(throwOn3(n))), reduce((a: number, b: number) => a + b, { uid: 'sum' }), forEach(() => undefined))],
    ['reduce', 'sum', (_job, input) => input.pipe(keyBy(() => 'k'), reduce((a: number, b: number) => a + throwOn3(b), { uid: 'sum' }), forEach(() => undefined))],
    [
      'process',
      'detect',
      (_job, input) => input.pipe(keyBy(() => 'k'), process<number, number>({ onElement: (n, _ctx, out) => out.emit(throwOn3(n)) }, { uid: 'detect' }), forEach(() => undefined)),
    ],
    [
      'a window function',
      'per-window',
      (_job, input) =>
        input.pipe(
          assignTimestamps((n: number) => n),
          keyBy(() => 'k'),
          window(tumbling(10)),
          aggregate({ createAccumulator: () => 0, add: (n: number, acc: number) => acc + throwOn3(n), getResult: (acc) => acc, merge: (a, b) => a + b }, { uid: 'per-window' }),
          forEach(() => undefined),
        ),
    ],
    [
      'coProcess',
      'both',
      (job, input) =>
        connect(input.pipe(keyBy((n: number) => String(n))), job.source(fromArray([9]), { uid: 'other' }).pipe(keyBy((n: number) => String(n)))).pipe(
          coProcess<number, number, number>({ onElement1: (n, _ctx, out) => out.emit(throwOn3(n)), onElement2: () => undefined }, { uid: 'both' }),
          forEach(() => undefined),
        ),
    ],
    ['a sink callback', 'print', (_job, input) => input.pipe(forEach((n: number) => void throwOn3(n), { uid: 'print' }))],
  ])('in %s fails the job naming its uid, with the thrown error as cause', async (_where, uid, build) => {
    const error = (await failure(build)) as UserFunctionError;
    expect(error).toBeInstanceOf(UserFunctionError);
    expect(error.uid).toBe(uid);
    expect(error.job).toBe('failing');
    expect(error.cause).toBe(boom);
    expect(error.cause).toBeInstanceOf(ParseError);
    expect(error.message).toMatch(new RegExp(`^operator '${uid}' \\(\\w+\\) of job 'failing' failed: Error: bad record`));
  });

  it('names the thrown value when it is not an Error', async () => {
    const error = (await failure((_job, input) =>
      input.pipe(
        map((n: number) => {
          if (n === 2) throw 'just a string';
          return n;
        }, { uid: 'throws-a-string' }),
        forEach(() => undefined),
      ),
    )) as UserFunctionError;
    expect(error.message).toMatch(/operator 'throws-a-string' \(map\) of job 'failing' failed: just a string/);
    expect(error.cause).toBe('just a string');
  });

  it("leaves weir's own typed errors as they are (they name what they are about)", async () => {
    const error = await failure((_job, input) => input.pipe(keyBy(() => ({}) as never), reduce((a: number, b: number) => a + b, { uid: 'sum' }), forEach(() => undefined)));
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect((error as Error).message).toMatch(/'sum'/);
  });

  it('shows up in the test harness as thrown, as RxJS marble tests expect', async () => {
    const h = await harness((input: Flow<number>) => input.pipe(map(throwOn3, { uid: 'parse' })));
    h.push(1);
    let thrown: unknown;
    try {
      h.push(3);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBe(boom);
    expect(h.values()).toEqual([1]);
    h.close();
  });
});
