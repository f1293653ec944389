import { asyncScheduler, type SchedulerAction, type SchedulerLike } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { collect, createJob, keyBy, listState, mapState, memoryCheckpointStorage, process, valueState } from 'weir';
import { inspectStorage } from '../../src/inspector/readCheckpoint';
import { readCheckpointEntries } from '../../src/inspector/readStateEntries';
import { pausableSource } from '../checkpoint/jobFixtures';
import { visits, type Visit } from '../query/fixtures';

/** Real scheduling on a processing-time clock the test sets: the TTL stamps values with it. */
function clockAt(time: { now: number }): SchedulerLike {
  return {
    now: () => time.now,
    schedule: <T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T) => asyncScheduler.schedule(work, delay, state),
  };
}

const ttl = { ttl: 60_000 };
const lastMs = valueState<number>('last-ms', { ttl });
const pagesSeen = listState<string>('pages-seen', { ttl });
const pageAt = mapState<string, Date>('page-at', { ttl });
const count = valueState<number>('count', { default: 0 });

describe('readCheckpointEntries', () => {
  it("shows a TTL state's values as the job stored them, with their last-access times apart", async () => {
    const storage = memoryCheckpointStorage();
    const time = { now: 1_000 };
    // 24 visits: each of the 12 users visits once at t=1000, then once more, the same page, at t=2000.
    const paused = pausableSource(visits.slice(0, 24), [12]);
    const job = createJob({ name: 'ttl-visits', scheduler: clockAt(time), chunkSize: 4, checkpoints: { storage } });
    job.source(paused.source, { uid: 'visits' }).pipe(
      keyBy((v: Visit) => v.user),
      process<Visit, number>(
        {
          onElement(v, ctx) {
            ctx.state(lastMs).update(v.ms);
            ctx.state(pagesSeen).add(v.page);
            ctx.state(pageAt).put(v.page, v.at);
            ctx.state(count).update(ctx.state(count).value()! + 1);
          },
        },
        { uid: 'per-user' },
      ),
      collect<number>().sink(),
    );
    const running = job.start();
    await paused.reached(12);
    time.now = 2_000;
    paused.release(12);
    await running.done;

    const [summary] = await inspectStorage(storage);
    const checkpoint = summary!.checkpoints.at(-1)!;
    const states = checkpoint.operators.find((o) => o.uid === 'per-user')!.states;
    expect(states.map((s) => [s.name, s.ttl])).toEqual([['last-ms', true], ['pages-seen', true], ['page-at', true], ['count', false]]);

    const entries = (await readCheckpointEntries(storage, checkpoint.path)).get('per-user')!;
    const of = (state: string, key: string) => entries.get(state)!.find((entry) => entry.key === key);
    // user-01 visited p1 at visits 1 and 13.
    expect(of('last-ms', 'user-01')).toMatchObject({ value: 13, decoded: true, lastAccess: 2_000 });
    expect(of('pages-seen', 'user-01')).toMatchObject({ value: ['p1', 'p1'], decoded: true, lastAccess: [1_000, 2_000] });
    expect(of('page-at', 'user-01')).toMatchObject({ value: new Map([['p1', visits[13]!.at]]), decoded: true, lastAccess: [2_000] });
    expect(of('count', 'user-01')).toEqual({ key: 'user-01', keyGroup: expect.any(Number), value: 2, decoded: true });
  });
});
