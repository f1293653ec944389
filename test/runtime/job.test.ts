import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  JobDefinitionError,
  asObservable,
  collect,
  createJob,
  forEach,
  fromArray,
  keyBy,
  map,
  reduce,
  type Source,
} from 'weir';

/** A replayable source over `records` that counts how often it was opened. */
function countingSource<T>(records: T[]): Source<T> & { opened: number } {
  const inner = fromArray(records);
  const source = {
    name: 'counting',
    replayable: true,
    opened: 0,
    open(context: Parameters<Source<T>['open']>[0]) {
      source.opened++;
      return inner.open(context);
    },
  };
  return source;
}

describe('job definition', () => {
  it('runs nothing before start()', async () => {
    const job = createJob({ name: 'lazy' });
    const source = countingSource([1, 2]);
    const seen: number[] = [];
    job.source(source, { uid: 'in' }).pipe(
      map((n) => {
        seen.push(n);
        return n;
      }),
      forEach(() => undefined),
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(source.opened).toBe(0);
    expect(seen).toEqual([]);
    await job.start().done;
    expect(source.opened).toBe(1);
    expect(seen).toEqual([1, 2]);
  });

  it('generates the same uids for the same graph', () => {
    const build = () => {
      const job = createJob({ name: 'uids' });
      const source = job.source(fromArray([1]));
      const mapped = source.pipe(map((n) => n));
      const summed = mapped.pipe(
        keyBy((n) => n),
        reduce((a, b) => a + b),
      );
      return [source, mapped, summed].map((flow) => flow.node.uid);
    };
    const uids = build();
    expect(new Set(uids).size).toBe(3);
    expect(build()).toEqual(uids);
  });

  it('rejects a uid used twice with JobDefinitionError naming it', () => {
    const job = createJob({ name: 'dup' });
    const source = job.source(fromArray([1]), { uid: 'same' });
    expect(() => source.pipe(map((n) => n, { uid: 'same' }))).toThrow(JobDefinitionError);
    expect(() => source.pipe(map((n) => n, { uid: 'same' }))).toThrow(/'same'/);
  });

  it.each([
    ['an empty name', { name: '' }],
    ['a name with a slash', { name: 'a/b' }],
    ['a non-positive checkpoint interval', { name: 'j', checkpoints: { interval: 0 } }],
    ['a retain below 1', { name: 'j', checkpoints: { retain: 0 } }],
  ])('rejects %s with JobDefinitionError', (_what, options) => {
    expect(() => createJob(options)).toThrow(JobDefinitionError);
  });

  it('rejects an unknown restart strategy with JobDefinitionError when the job is created', () => {
    expect(() => createJob({ name: 'j', restart: { strategy: 'sometimes' } as never })).toThrow(JobDefinitionError);
  });

  it('can be started once, and its graph does not change after start', async () => {
    const job = createJob({ name: 'once' });
    const flow = job.source(fromArray([1]), { uid: 'in' });
    flow.pipe(forEach(() => undefined));
    const running = job.start();
    expect(() => job.start()).toThrow(JobDefinitionError);
    expect(() => flow.pipe(map((n) => n))).toThrow(JobDefinitionError);
    await running.done;
  });

  it('rejects a restore with checkpointing off with JobDefinitionError', async () => {
    const job = createJob({ name: 'no-checkpoints' });
    job.source(fromArray([1]), { uid: 'in' }).pipe(forEach(() => undefined));
    await expect(job.start({ restore: 'latest' }).done).rejects.toThrow(JobDefinitionError);
  });
});

describe('job results', () => {
  it('resolves done with status finished, no restarts and nothing restored', async () => {
    const job = createJob({ name: 'plain' });
    job.source(fromArray([1]), { uid: 'in' }).pipe(forEach(() => undefined));
    const result = await job.start().done;
    expect(result).toMatchObject({ status: 'finished', restarts: 0, restoredFrom: undefined, checkpoints: [] });
  });

  it('feeds one flow to two sinks (fan-out), each seeing every record once', async () => {
    const job = createJob({ name: 'fan-out' });
    const doubled = collect<number>();
    const summed = collect<number>();
    const numbers = job.source(fromArray([1, 2, 3, 4]), { uid: 'in' });
    numbers.pipe(map((n) => n * 2), doubled.sink({ uid: 'doubled' }));
    numbers.pipe(
      keyBy((n) => n % 2),
      reduce((a, b) => a + b, { uid: 'sum' }),
      summed.sink({ uid: 'summed' }),
    );
    await job.start().done;
    expect(doubled.values).toEqual([2, 4, 6, 8]);
    expect(summed.values).toEqual([1, 2, 4, 6]);
  });

  it('fans out with checkpointing on as well', async () => {
    const job = createJob({ name: 'fan-out-checkpointed', checkpoints: {} });
    const left = collect<number>();
    const right = collect<number>();
    const numbers = job.source(fromArray([1, 2, 3]), { uid: 'in' });
    numbers.pipe(left.sink({ uid: 'left' }));
    numbers.pipe(map((n) => -n), right.sink({ uid: 'right' }));
    const result = await job.start().done;
    expect(left.values).toEqual([1, 2, 3]);
    expect(right.values).toEqual([-1, -2, -3]);
    expect(result.checkpoints.map((c) => c.final)).toEqual([true]);
  });
});

describe('sinks', () => {
  it('forEach calls its function for every record, in order', async () => {
    const job = createJob({ name: 'for-each' });
    const seen: string[] = [];
    job.source(fromArray(['a', 'b', 'c']), { uid: 'in' }).pipe(forEach((s) => seen.push(s)));
    await job.start().done;
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it('collect makes values visible only once the job finishes or a checkpoint covers them', async () => {
    const job = createJob({ name: 'collect' });
    const out = collect<number>();
    job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(out.sink());
    const done = job.start().done;
    expect(out.values).toEqual([]);
    await done;
    expect(out.values).toEqual([1, 2, 3]);
  });

  it('asObservable emits every record and completes when the job ends', async () => {
    const job = createJob({ name: 'observable' });
    const values$ = job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(
      map((n) => n + 1),
      asObservable(),
    );
    const all = lastValueFrom(values$.pipe(toArray()));
    await job.start().done;
    expect(await all).toEqual([2, 3, 4]);
  });

  it('asObservable errors with the job’s error when the job fails', async () => {
    const job = createJob({ name: 'observable-fails' });
    const boom = new Error('boom');
    const values$ = job.source(fromArray([1, 2]), { uid: 'in' }).pipe(
      map((n) => {
        if (n === 2) throw boom;
        return n;
      }),
      asObservable(),
    );
    const seen: number[] = [];
    const ended = new Promise<unknown>((resolve) => values$.subscribe({ next: (n) => seen.push(n), error: resolve, complete: () => resolve('completed') }));
    const error = await job.start().done.catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'UserFunctionError', uid: 'map-1', cause: boom });
    expect(await ended).toBe(error);
    expect(seen).toEqual([1]);
  });
});
