import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subject, of, throwError } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  NonReplayableSourceError,
  collect,
  createJob,
  fromArray,
  fromAsyncIterable,
  fromIterable,
  fromObservable,
  keyBy,
  memoryCheckpointStorage,
  reduce,
  type Source,
} from 'weir';
import { fsCheckpointStorage } from 'weir/node';

async function collectAll<T>(source: Source<T>, options: { chunkSize?: number } = {}): Promise<T[]> {
  const job = createJob({ name: 'sources', ...options });
  const out = collect<T>();
  job.source(source, { uid: 'in' }).pipe(out.sink());
  await job.start().done;
  return [...out.values];
}

describe('fromIterable', () => {
  it('reads any iterable, across several chunks', async () => {
    expect(await collectAll(fromIterable(new Set(['a', 'b', 'c'])), { chunkSize: 2 })).toEqual(['a', 'b', 'c']);
  });

  it('reads an iterable whose iterator is created per run', async () => {
    function* numbers() {
      yield* [1, 2, 3];
    }
    expect(await collectAll(fromIterable({ [Symbol.iterator]: numbers }))).toEqual([1, 2, 3]);
  });

  it('finishes on an empty iterable', async () => {
    expect(await collectAll(fromIterable([]))).toEqual([]);
  });
});

describe('fromArray', () => {
  it('emits every record once, in order, across chunks and the last partial one', async () => {
    expect(await collectAll(fromArray([1, 2, 3, 4, 5]), { chunkSize: 2 })).toEqual([1, 2, 3, 4, 5]);
    expect(await collectAll(fromArray([]), { chunkSize: 2 })).toEqual([]);
  });

  it('keeps the public reader contract for whoever calls read: copies of up to max records, the offset after them, null at the end', async () => {
    const records = ['a', 'b', 'c'];
    const reader = await fromArray(records).open({ uid: 'in', restoredOffset: 1 });
    const chunk = reader.read(5) as string[];
    expect(chunk).toEqual(['b', 'c']);
    chunk[0] = 'changed';
    expect(records).toEqual(['a', 'b', 'c']);
    expect(reader.offset()).toBe(3);
    expect(reader.read(5)).toBeNull();
  });
});

describe('fromAsyncIterable', () => {
  it('reads an async iterable, waiting for each record', async () => {
    async function* slow() {
      for (let i = 0; i < 5; i++) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        yield i;
      }
    }
    expect(await collectAll(fromAsyncIterable({ [Symbol.asyncIterator]: slow }), { chunkSize: 2 })).toEqual([0, 1, 2, 3, 4]);
  });

  it('fails the job when the async iterable throws', async () => {
    const broken = new Error('broken input');
    async function* failing() {
      yield 1;
      throw broken;
    }
    // The source's iterator is user code: the error names the source, with the thrown one as its cause.
    await expect(collectAll(fromAsyncIterable({ [Symbol.asyncIterator]: failing }))).rejects.toEqual(
      expect.objectContaining({ name: 'UserFunctionError', uid: 'in', job: 'sources', cause: broken }),
    );
  });
});

describe('fromObservable', () => {
  it('reads what the observable emits until it completes', async () => {
    const subject = new Subject<number>();
    const all = collectAll(fromObservable(subject));
    await new Promise((resolve) => setTimeout(resolve, 1));
    subject.next(1);
    subject.next(2);
    await new Promise((resolve) => setTimeout(resolve, 1));
    subject.next(3);
    subject.complete();
    expect(await all).toEqual([1, 2, 3]);
  });

  it('fails the job with the observable’s error', async () => {
    const broken = new Error('broken stream');
    await expect(collectAll(fromObservable(throwError(() => broken)))).rejects.toEqual(expect.objectContaining({ uid: 'in', cause: broken }));
  });

  it('is not replayable', () => {
    expect(fromObservable(of(1)).replayable).toBe(false);
    expect(fromIterable([1]).replayable).toBe(true);
  });

  describe('restore from a persisted checkpoint', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'weir-sources-'));
    });
    afterEach(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    const jobOver = (source: Source<string>) => {
      const job = createJob({ name: 'observed', checkpoints: { storage: fsCheckpointStorage(dir) } });
      job.source(source, { uid: 'in' }).pipe(
        keyBy((s) => s),
        reduce((a, b) => a + b, { uid: 'concat' }),
        collect<string>().sink({ uid: 'out' }),
      );
      return job;
    };

    it('is rejected with NonReplayableSourceError naming the source', async () => {
      await jobOver(fromObservable(of('a', 'b'))).start().done;
      const done = jobOver(fromObservable(of('c'))).start({ restore: 'latest' }).done;
      await expect(done).rejects.toThrow(NonReplayableSourceError);
      await expect(done).rejects.toThrow(/'in'/);
    });

    it('starts fresh without a restore, even where checkpoints of the job exist', async () => {
      const memory = memoryCheckpointStorage();
      const job = createJob({ name: 'j', checkpoints: { storage: memory } });
      job.source(fromObservable(of(1)), { uid: 'in' }).pipe(collect<number>().sink({ uid: 'out' }));
      await job.start().done;
      // Without a restore, a job with the same checkpoints starts fresh and may use fromObservable freely.
      const again = createJob({ name: 'j', checkpoints: { storage: memory } });
      const out = collect<number>();
      again.source(fromObservable(of(7)), { uid: 'in' }).pipe(out.sink({ uid: 'out' }));
      await again.start().done;
      expect(out.values).toEqual([7]);
    });
  });
});

describe('a start that fails after a source was opened', () => {
  it('closes the readers it opened (a later source failed to open)', async () => {
    const closed: string[] = [];
    const opened = (name: string): Source<number> => ({
      name,
      replayable: true,
      open: () => ({ read: () => null, offset: () => 0, close: () => void closed.push(name) }),
    });
    const refusing: Source<number> = {
      name: 'refusing',
      replayable: true,
      open: () => {
        throw new Error('the broker refused the connection');
      },
    };
    const job = createJob({ name: 'opens' });
    const out = collect<number>();
    job.source(opened('first'), { uid: 'first' }).pipe(out.sink({ uid: 'first-out' }));
    job.source(refusing, { uid: 'refusing' }).pipe(out.sink({ uid: 'refusing-out' }));
    await expect(job.start().done).rejects.toThrow(/refused/);
    expect(closed).toEqual(['first']);
  });
});
