// A throw from a function that runs when a timer fires (onTimer, a window function at its firing) goes through the
// same error path as one from a record's function: the job fails with a UserFunctionError naming the operator's uid.
import { describe, expect, it } from 'vitest';
import { UserFunctionError, assignTimestamps, connect, coProcess, createJob, forEach, fromArray, keyBy, process, tumbling, window, type Flow, type Job } from 'weir';

const boom = new Error('timer went off');

async function failure(build: (job: Job, input: Flow<number>) => void): Promise<unknown> {
  const job = createJob({ name: 'timed' });
  build(job, job.source(fromArray([1, 2, 30]), { uid: 'in' }).pipe(assignTimestamps((n: number) => n, { interval: 0 })));
  return job.start().done.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('a function that throws when a timer fires', () => {
  it.each<[string, string, (job: Job, input: Flow<number>) => void]>([
    [
      'process onTimer',
      'alarm',
      (_job, input) =>
        input.pipe(
          keyBy(() => 'k'),
          process<number, number>(
            {
              onElement: (n, ctx) => ctx.timers.registerEventTimeTimer(n + 5),
              onTimer: () => {
                throw boom;
              },
            },
            { uid: 'alarm' },
          ),
          forEach(() => undefined),
        ),
    ],
    [
      'coProcess onTimer',
      'both',
      (job, input) =>
        connect(input.pipe(keyBy(() => 'k')), job.source(fromArray([9]), { uid: 'other' }).pipe(assignTimestamps((n: number) => n, { interval: 0 }), keyBy(() => 'k'))).pipe(
          coProcess<number, number, number>(
            {
              onElement1: (n, ctx) => ctx.timers.registerEventTimeTimer(n + 5),
              onElement2: () => undefined,
              onTimer: () => {
                throw boom;
              },
            },
            { uid: 'both' },
          ),
          forEach(() => undefined),
        ),
    ],
    [
      'a window function at its firing',
      'per-window',
      (_job, input) =>
        input.pipe(
          keyBy(() => 'k'),
          window(tumbling(10)),
          process<number, number>(
            {
              process: () => {
                throw boom;
              },
            },
            { uid: 'per-window' },
          ),
          forEach(() => undefined),
        ),
    ],
  ])('in %s fails the job naming its uid, with the thrown error as cause', async (_where, uid, build) => {
    const error = (await failure(build)) as UserFunctionError;
    expect(error).toBeInstanceOf(UserFunctionError);
    expect(error.uid).toBe(uid);
    expect(error.job).toBe('timed');
    expect(error.cause).toBe(boom);
  });
});
