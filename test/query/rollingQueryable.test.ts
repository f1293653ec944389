import { describe, expect, it } from 'vitest';
import {
  JobDefinitionError,
  aggregate,
  collect,
  createJob,
  fold,
  keyBy,
  memoryCheckpointStorage,
  reduce,
  tumbling,
  window,
  type CheckpointStorage,
  type Source,
} from 'weir';
import { pausableSource } from '../checkpoint/jobFixtures';
import { expectedAfter, visits, type Visit } from './fixtures';

/** Per user: the rolling reduce of visits (the latest visit, with `ms` summed), a fold counting them, the mean `ms`. */
function rollingJob(source: Source<Visit>, storage?: CheckpointStorage) {
  const job = createJob({ name: 'rolling', chunkSize: 10, ...(storage ? { checkpoints: { storage, retain: 3 } } : {}) });
  const byUser = job.source(source, { uid: 'visits' }).pipe(keyBy((v: Visit) => v.user));
  byUser.pipe(
    reduce((a: Visit, b: Visit) => ({ ...b, ms: a.ms + b.ms }), { uid: 'latest', queryable: 'latest-visit' }),
    collect<Visit>().sink(),
  );
  byUser.pipe(fold(0, (n: number) => n + 1, { uid: 'count', queryable: 'visit-count' }), collect<number>().sink());
  byUser.pipe(
    aggregate(
      {
        createAccumulator: () => ({ sum: 0, n: 0 }),
        add: (v: Visit, acc: { sum: number; n: number }) => ({ sum: acc.sum + v.ms, n: acc.n + 1 }),
        getResult: (acc) => acc.sum / acc.n,
        merge: (a, b) => ({ sum: a.sum + b.sum, n: a.n + b.n }),
      },
      { uid: 'mean', queryable: 'mean-ms' },
    ),
    collect<number>().sink(),
  );
  return job;
}

const totalMs = (n: number, user: string) => visits.slice(0, n).filter((v) => v.user === user).reduce((sum, v) => sum + v.ms, 0);

describe('queryable rolling reduce, fold and aggregate', () => {
  it('answer from the start, then with each key’s current reduction, count and mean', async () => {
    const paused = pausableSource(visits, [0, 20]);
    const running = rollingJob(paused.source).start();
    // Registered when the operators start, before any record: an empty state answers undefined.
    expect(await running.query('latest-visit', 'user-03')).toBeUndefined();
    expect(running.queryableStates().map((s) => s.name).sort()).toEqual(['latest-visit', 'mean-ms', 'visit-count']);
    paused.release(0);
    await paused.reached(20);
    const expected = expectedAfter(20, 'user-03')!;
    expect(await running.query('visit-count', 'user-03')).toBe(expected.count);
    expect(await running.query('mean-ms', 'user-03')).toBe(expected.avgMs);
    const latest = await running.query<Visit>('latest-visit', 'user-03');
    expect(latest).toMatchObject({ user: 'user-03', ms: totalMs(20, 'user-03') });
    expect((await running.queryKeys('visit-count', { prefix: 'admin-' })).keys).toEqual(['admin-0', 'admin-1']);
    paused.releaseAll();
    await running.done;
  });

  it('answer with the restored values after a restore, before any record arrives', async () => {
    const storage = memoryCheckpointStorage();
    const paused = pausableSource(visits, [20]);
    const running = rollingJob(paused.source, storage).start();
    await paused.reached(20);
    const checkpoint = await running.checkpoint();
    paused.releaseAll();
    await running.done;

    const again = pausableSource(visits, [20]);
    const restored = rollingJob(again.source, storage).start({ restore: checkpoint.path });
    await again.reached(20);
    expect(await restored.query('visit-count', 'user-07')).toBe(expectedAfter(20, 'user-07')!.count);
    expect(await restored.query('mean-ms', 'user-07')).toBe(expectedAfter(20, 'user-07')!.avgMs);
    expect(await restored.query<Visit>('latest-visit', 'user-07')).toMatchObject({ ms: totalMs(20, 'user-07') });
    again.releaseAll();
    await restored.done;
  });

  it('is refused after window(…), whose state lives per window', () => {
    const job = createJob({ name: 'windowed' });
    const windowed = job
      .source(pausableSource(visits, []).source, { uid: 'visits' })
      .pipe(keyBy((v: Visit) => v.user), window(tumbling(60_000, { time: 'processing-time' })));
    expect(() => windowed.pipe(reduce((a: Visit) => a, { uid: 'w', queryable: 'w' }))).toThrow(JobDefinitionError);
    expect(() => windowed.pipe(reduce((a: Visit) => a, { uid: 'w', queryable: 'w' }))).toThrow(/queryable option is for the rolling reduce/);
  });
});
