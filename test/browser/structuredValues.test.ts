// Rich state values (Map, Set, Date, BigInt) in IndexedDB checkpoints: kept beside the state file as structured-clone
// values rather than superjson inside it, restored exactly; savepoints stay self-contained.
import { createStore, get, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { collect, createJob, forEach, fromArray, keyBy, process, readSavepoint, valueState, type CheckpointStorage, type Collector, type Source } from 'weir';
import { indexedDbCheckpointStorage } from 'weir/browser';
import { CHUNK, pausableSource } from '../checkpoint/jobFixtures';
import { freshDbName } from './idbFixtures';

interface Visit {
  user: string;
  page: string;
  at: number;
}

/** Per user: the pages seen, when last seen, how many visits (a bigint), visits per page; `note` only where a test wants a value structured clone refuses. */
interface Seen {
  pages: Set<string>;
  last: Date;
  visits: bigint;
  byPage: Map<string, number>;
  note?: () => string;
}

const visits: Visit[] = Array.from({ length: 60 }, (_, n) => ({ user: `u${n % 4}`, page: `p${n % 7}`, at: 1_700_000_000_000 + n * 1000 }));

const seen = valueState<Seen>('seen');

function visitsJob(storage: CheckpointStorage, source: Source<Visit>, out: Collector<string>, withCallback = false) {
  const job = createJob({ name: 'visits', chunkSize: CHUNK, checkpoints: { storage, retain: 2 } });
  job.source(source, { uid: 'visits' }).pipe(
    keyBy((v: Visit) => v.user),
    process<Visit, string>(
      {
        onElement(visit, ctx, emit) {
          const state = ctx.state(seen);
          const current = state.value() ?? { pages: new Set<string>(), last: new Date(0), visits: 0n, byPage: new Map<string, number>() };
          const next: Seen = {
            pages: new Set([...current.pages, visit.page]),
            last: new Date(visit.at),
            visits: current.visits + 1n,
            byPage: new Map([...current.byPage, [visit.page, (current.byPage.get(visit.page) ?? 0) + 1]]),
            ...(withCallback ? { note: () => visit.user } : {}),
          };
          state.update(next);
          emit.emit(`${visit.user}:${next.visits}:${next.pages.size}:${next.last.toISOString()}:${next.byPage.get(visit.page)}`);
        },
      },
      { uid: 'seen' },
    ),
    out.sink({ uid: 'out' }),
  );
  return job;
}

/** The outputs of an uninterrupted run. */
async function uninterrupted(): Promise<readonly string[]> {
  const out = collect<string>();
  await visitsJob(indexedDbCheckpointStorage({ dbName: freshDbName() }), pausableSource(visits, []).source, out).start().done;
  return out.values;
}

/** The one state file of the `seen` operator in a checkpoint directory, as IndexedDB holds it. */
async function seenRecord(dbName: string, dir: string): Promise<unknown> {
  const storage = indexedDbCheckpointStorage({ dbName });
  const file = (await storage.list(dir)).find((name) => name.startsWith('seen.'));
  expect(file).toBeDefined();
  return get(`${dir}/${file}`, createStore(dbName, 'files'));
}

describe('rich state values in IndexedDB checkpoints', () => {
  it('are kept beside the state file as structured-clone values and restore exactly', async () => {
    const whole = await uninterrupted();
    const dbName = freshDbName();
    const out = collect<string>();
    const paused = pausableSource(visits, [40]);
    const running = visitsJob(indexedDbCheckpointStorage({ dbName }), paused.source, out).start();
    await paused.reached(40);
    const stats = await running.checkpoint();
    await running.cancel();

    const record = (await seenRecord(dbName, 'visits/chk-1')) as { data: Blob; values: Seen[] };
    expect(record.values).toHaveLength(4);
    for (const value of record.values) {
      expect(value.pages).toBeInstanceOf(Set);
      expect(value.byPage).toBeInstanceOf(Map);
      expect(value.last).toBeInstanceOf(Date);
      expect(value.visits).toBe(10n);
    }
    const text = await record.data.text();
    // Version 4: checksummed with XXH32, as files are where there is no native CRC-32.
    expect(text.split('\n')[0]).toMatch(/"version":4,.*"xxh32":-?\d+,"values":4\}$/);
    expect(text).not.toContain('$superjson');

    paused.release(40);
    const rest = collect<string>();
    const result = await visitsJob(indexedDbCheckpointStorage({ dbName }), paused.source, rest).start({ restore: stats.path }).done;
    expect(result.restoredFrom).toBe(stats.path);
    expect([...out.values.slice(0, 40), ...rest.values]).toEqual(whole);
  });

  it('are read back by the State Processor API (and so by the inspector) without the job', async () => {
    const dbName = freshDbName();
    const paused = pausableSource(visits, [40]);
    const running = visitsJob(indexedDbCheckpointStorage({ dbName }), paused.source, collect<string>()).start();
    await paused.reached(40);
    const stats = await running.checkpoint();
    await running.cancel();
    const reader = await readSavepoint(indexedDbCheckpointStorage({ dbName }), stats.path);
    const users = new Map<unknown, Seen>();
    for await (const [user, value] of reader.keyedState('seen', 'seen')) users.set(user, value as Seen);
    expect([...users.keys()].sort()).toEqual(['u0', 'u1', 'u2', 'u3']);
    expect(users.get('u3')).toEqual({ pages: new Set(['p3', 'p0', 'p4', 'p1', 'p5', 'p2', 'p6']), last: new Date(visits[39]!.at), visits: 10n, byPage: expect.any(Map) });
  });

  it('missing from a record make its checkpoint corrupted, and restore latest falls back to the one before', async () => {
    const dbName = freshDbName();
    const storage = indexedDbCheckpointStorage({ dbName });
    const out = collect<string>();
    const paused = pausableSource(visits, [20, 40]);
    const running = visitsJob(storage, paused.source, out).start();
    await paused.reached(20);
    await running.checkpoint();
    paused.release(20);
    await paused.reached(40);
    await running.checkpoint();
    await running.cancel();
    // Checkpoint 2's state file loses the values kept beside it (as if written by something that ignores them).
    const files = createStore(dbName, 'files');
    const file = (await storage.list('visits/chk-2')).find((name) => name.startsWith('seen.'))!;
    const record = (await get(`visits/chk-2/${file}`, files)) as { data: Blob };
    await set(`visits/chk-2/${file}`, record.data, files);

    await expect(visitsJob(storage, paused.source, collect<string>()).start({ restore: 'visits/chk-2' }).done).rejects.toThrow(
      /seen\.0.*4 values kept beside the file.*not found/,
    );
    paused.release(40);
    const rest = collect<string>();
    const result = await visitsJob(storage, paused.source, rest).start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBe('visits/chk-1');
    expect([...out.values.slice(0, 20), ...rest.values]).toEqual(await uninterrupted());
  });

  it('are numbered across the pieces of a large state and its files, and read back exactly', async () => {
    // More keys than one state file holds (131 072 entries), each file built from several pieces: a rich value
    // every 7th key, the rest plain JSON, so the markers of every piece must point into their own file's list.
    const keys = 140_000;
    const richAt = (n: number) => n % 7 === 3;
    const valueOf = (n: number) => (richAt(n) ? { n, at: new Date(1_700_000_000_000 + n), tags: new Set([`t${n % 5}`]) } : { n, tag: `t${n % 5}` });
    const latest = valueState<unknown>('latest');
    const dbName = freshDbName();
    const storage = indexedDbCheckpointStorage({ dbName });
    const job = createJob({ name: 'large', checkpoints: { storage, retain: 1 } });
    job.source(fromArray(Array.from({ length: keys }, (_, n) => n)), { uid: 'numbers' }).pipe(
      keyBy((n: number) => `k${n}`),
      process<number, never>({ onElement: (n, ctx) => ctx.state(latest).update(valueOf(n)) }, { uid: 'latest' }),
      forEach(() => undefined),
    );
    const result = await job.start().done;
    const path = result.checkpoints.at(-1)!.path;

    const dir = path.slice(`indexeddb://${dbName}/`.length);
    const files = createStore(dbName, 'files');
    const stateFiles = (await storage.list(dir)).filter((name) => name.startsWith('latest.'));
    expect(stateFiles.length).toBeGreaterThan(1);
    let setAside = 0;
    for (const name of stateFiles) {
      const record = (await get(`${dir}/${name}`, files)) as { data: Blob; values: unknown[] };
      // Version 5: the plain values are written as rows of their fields, the rich ones set aside.
      expect((await record.data.text()).split('\n')[0]).toMatch(new RegExp(`"version":5.*"xxh32".*"values":${record.values.length}\\}`));
      setAside += record.values.length;
    }
    expect(setAside).toBe(Array.from({ length: keys }, (_, n) => n).filter(richAt).length);

    const reader = await readSavepoint(storage, path);
    let read = 0;
    for await (const [key, value] of reader.keyedState('latest', 'latest')) {
      expect(value).toEqual(valueOf(Number((key as string).slice(1))));
      read++;
    }
    expect(read).toBe(keys);
  });

  it('fall back to superjson beside the file when structured clone refuses a value (a function)', async () => {
    const dbName = freshDbName();
    const out = collect<string>();
    const paused = pausableSource(visits, [20]);
    const running = visitsJob(indexedDbCheckpointStorage({ dbName }), paused.source, out, true).start();
    await paused.reached(20);
    expect((await running.checkpoint()).status).toBe('completed');
    await running.cancel();
    expect(await seenRecord(dbName, 'visits/chk-1')).toMatchObject({ encoding: 'superjson' });

    // The values come back as superjson keeps them (the function is dropped, as on any other storage).
    paused.release(20);
    const rest = collect<string>();
    await visitsJob(indexedDbCheckpointStorage({ dbName }), paused.source, rest, true).start({ restore: 'latest' }).done;
    expect(rest.values[0]).toBe(`u0:6:6:${new Date(visits[20]!.at).toISOString()}:1`);
  });

  it('stay inside the file in a savepoint, which is self-contained', async () => {
    const dbName = freshDbName();
    const storage = indexedDbCheckpointStorage({ dbName });
    const paused = pausableSource(visits, [40]);
    const running = visitsJob(storage, paused.source, collect<string>()).start();
    await paused.reached(40);
    const savepoint = await running.savepoint();
    await running.cancel();
    const dir = savepoint.path.slice(`indexeddb://${dbName}/`.length);
    // A file this small is stored as its bytes: nothing beside them.
    const record = await seenRecord(dbName, dir);
    expect(record).toBeInstanceOf(Uint8Array);
    expect(new TextDecoder().decode(record as Uint8Array)).toContain('$superjson');
  });
});
