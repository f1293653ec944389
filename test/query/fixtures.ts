import {
  aggregatingState,
  collect,
  createJob,
  keyBy,
  mapState,
  process,
  valueState,
  type CheckpointStorage,
  type JobOptions,
  type Source,
} from 'weir';
import { pausableSource } from '../checkpoint/jobFixtures';

export interface Visit {
  user: string;
  page: string;
  ms: number;
  at: Date;
}

/** 60 visits over 12 users: `user-00` … `user-09`, `admin-0`, `admin-1`; each user visits pages `p0`–`p2`. */
export const visits: Visit[] = Array.from({ length: 60 }, (_, i) => ({
  user: i % 12 < 10 ? `user-${String(i % 12).padStart(2, '0')}` : `admin-${(i % 12) - 10}`,
  page: `p${i % 3}`,
  ms: i,
  at: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
}));

/** What the states hold for `user` after the first `n` visits. */
export function expectedAfter(n: number, user: string) {
  const mine = visits.slice(0, n).filter((v) => v.user === user);
  if (mine.length === 0) return undefined;
  const pages = new Map<string, Date>();
  for (const v of mine) pages.set(v.page, v.at);
  return { count: mine.length, pages, avgMs: mine.reduce((s, v) => s + v.ms, 0) / mine.length };
}

export const count = valueState<number>('count', { default: 0, queryable: 'visit-count' });
export const pages = mapState<string, Date>('pages', { queryable: 'last-visit-per-page' });
export const avgMs = aggregatingState(
  'avg-ms',
  {
    createAccumulator: () => ({ sum: 0, n: 0 }),
    add: (v: number, acc: { sum: number; n: number }) => ({ sum: acc.sum + v, n: acc.n + 1 }),
    getResult: (acc) => acc.sum / acc.n,
    merge: (a, b) => ({ sum: a.sum + b.sum, n: a.n + b.n }),
  },
  { queryable: 'avg-ms' },
);

/**
 * A keyed job keeping three queryable states per user; with `declareStates` its operator lists them in `states`, so
 * they are queryable from the start rather than from the first record.
 */
export function visitsJob(
  source: Source<Visit>,
  options: Partial<JobOptions> & { storage?: CheckpointStorage; fail?: (v: Visit) => boolean; declareStates?: boolean } = {},
) {
  const { storage, fail, declareStates, ...rest } = options;
  const job = createJob({ name: 'visits', checkpoints: storage ? { storage, retain: 5 } : undefined, ...rest });
  const out = collect<number>();
  job.source(source, { uid: 'visits' }).pipe(
    keyBy((v: Visit) => v.user),
    process<Visit, number>(
      {
        onElement(v, ctx, emit) {
          if (fail?.(v)) throw new Error(`failing on visit at ${v.ms}`);
          const c = ctx.state(count);
          c.update(c.value()! + 1);
          ctx.state(pages).put(v.page, v.at);
          ctx.state(avgMs).add(v.ms);
          emit.emit(c.value()!);
        },
      },
      { uid: 'per-user', states: declareStates ? [count, pages, avgMs] : undefined },
    ),
    out.sink(),
  );
  return { job, out };
}

/** Runs `visitsJob` to the end into `storage`: checkpoints 1 (after 20 visits), 2 (after 40) and 3 (the final one, after 60). */
export async function checkpointVisits(storage: CheckpointStorage): Promise<void> {
  const paused = pausableSource(visits, [20, 40]);
  const { job } = visitsJob(paused.source, { storage, chunkSize: 10 });
  const running = job.start();
  for (const at of [20, 40]) {
    await paused.reached(at);
    await running.checkpoint();
    paused.release(at);
  }
  await running.done;
}
