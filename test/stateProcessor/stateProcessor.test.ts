import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  collect,
  createJob,
  createSavepoint,
  deriveSavepoint,
  fromArray,
  keyBy,
  keyGroupOf,
  listState,
  mapState,
  memoryCheckpointStorage,
  process,
  readSavepoint,
  valueState,
  type StateClock,
} from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { readCheckpointEntries } from '../../src/inspector/readStateEntries';
import { events, outputs, pausableSource, rescaleJob, tempDir, type Ev } from '../support/savepointFixtures';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir('weir-state-processor-')));
afterEach(() => cleanup());

async function collectAll<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** A savepoint of the rescale job after 200 events, at parallelism 2. */
async function savepointAt200() {
  const storage = fsCheckpointStorage(dir);
  const paused = pausableSource(events, [200]);
  const running = rescaleJob({ checkpoints: { storage } }, paused.source, outputs(), 2).start();
  await paused.reached(200);
  const path = (await running.stop({ savepoint: { path: 'savepoints' } })).checkpoints.at(-1)!.path;
  paused.releaseAll();
  return { storage, path };
}

/** Rolling sums per key over `records`. */
function sums(records: Ev[]): Map<string, Ev> {
  const totals = new Map<string, Ev>();
  for (const e of records) totals.set(e.key, { key: e.key, n: (totals.get(e.key)?.n ?? 0) + e.n });
  return totals;
}

describe('readSavepoint', () => {
  it('lists operators with their parallelism and key-group ranges, and their states', async () => {
    const { storage, path } = await savepointAt200();
    const savepoint = await readSavepoint(storage, path);
    expect(savepoint.job).toBe('rescale');
    expect(savepoint.maxParallelism).toBe(128);
    const sum = savepoint.operators.find((o) => o.uid === 'sum')!;
    expect(sum).toEqual({ uid: 'sum', role: 'operator', parallelism: 2, keyGroupRanges: [[0, 63], [64, 127]] });
    expect(savepoint.operators.find((o) => o.uid === 'in')).toMatchObject({ role: 'source', keyGroupRanges: [] });
    const states = await savepoint.states('sum');
    expect(states).toHaveLength(1);
    expect(states[0]).toMatchObject({ kind: 'value', serializer: 'auto', version: 1 });
  });

  it('iterates keyed state as [key, value], per key group too, and operator state', async () => {
    const { storage, path } = await savepointAt200();
    const savepoint = await readSavepoint(storage, path);
    const [state] = await savepoint.states('sum');
    const entries = await collectAll(savepoint.keyedState('sum', state!.name));
    expect(new Map(entries as [string, Ev][])).toEqual(sums(events.slice(0, 200)));
    const group = keyGroupOf('k3', 128);
    const inGroup = await collectAll(savepoint.keyedState('sum', state!.name, { keyGroup: group }));
    expect(inGroup.map(([key]) => key)).toContain('k3');
    expect(inGroup.every(([key]) => keyGroupOf(key, 128) === group)).toBe(true);
    expect(await savepoint.operatorState('in')).toEqual([{ offset: 200 }]);
  });

  it('rejects a path without a savepoint, naming it', async () => {
    await expect(readSavepoint(fsCheckpointStorage(dir), 'nothing-here')).rejects.toThrow(/nothing-here/);
  });
});

describe('writing savepoints', () => {
  const totals = valueState<number>('total', { default: 0 });

  /** A job summing amounts per user into `totals`, emitting each new total. */
  function totalsJob(storage = memoryCheckpointStorage(), uid = 'per-user') {
    const out = collect<[string, number]>();
    const job = createJob({ name: 'totals', checkpoints: { storage } });
    job
      .source(fromArray([{ user: 'ann', n: 1 }, { user: 'cid', n: 5 }]), { uid: 'in' })
      .pipe(
        keyBy((r: { user: string; n: number }) => r.user),
        process<{ user: string; n: number }, [string, number]>(
          {
            onElement(r, ctx, o) {
              const state = ctx.state(totals);
              state.update(state.value()! + r.n);
              o.emit([r.user, state.value()!]);
            },
          },
          { uid, parallelism: 3 },
        ),
        out.sink({ uid: 'out' }),
      );
    return { job, out };
  }

  it('bootstraps keyed state for a new job, which restores it at any parallelism', async () => {
    const storage = memoryCheckpointStorage();
    const path = await createSavepoint({ job: 'totals' })
      .withKeyedState('per-user', totals, [['ann', 10], ['bob', 20]], { parallelism: 2 })
      .write(storage, 'bootstrap');
    const { job, out } = totalsJob(storage);
    await job.start({ restore: { savepoint: path } }).done;
    expect(out.values).toEqual([['ann', 11], ['cid', 5]]);
  });

  it('derives a savepoint: a state transformed, an operator renamed, one removed, one added', async () => {
    const storage = memoryCheckpointStorage();
    const first = await createSavepoint({ job: 'totals' })
      .withKeyedState('old-uid', totals, [['ann', 10], ['cid', 1]])
      .withKeyedState('legacy', mapState<string, number>('m'), [['x', new Map([['a', 1]])]])
      .write(storage, 'v1');
    const before = await readSavepoint(storage, first);
    const writer = await deriveSavepoint(before);
    const path = await writer
      .renameOperator('old-uid', 'per-user')
      .transformState('per-user', 'total', (value, key) => (key === 'cid' ? undefined : (value as number) * 2))
      .removeOperator('legacy')
      .addKeyedState('extra', valueState<string>('note'), [['ann', 'hi']])
      .write(storage, 'v2');
    const after = await readSavepoint(storage, path);
    expect(after.operators.map((o) => o.uid).sort()).toEqual(['extra', 'per-user']);
    expect(await collectAll(after.keyedState('per-user', 'total'))).toEqual([['ann', 20]]);
    // The original savepoint is untouched.
    expect(await collectAll((await readSavepoint(storage, first)).keyedState('old-uid', 'total'))).toHaveLength(2);
    expect(new Map(await collectAll((await readSavepoint(storage, first)).keyedState('legacy', 'm')))).toEqual(new Map([['x', new Map([['a', 1]])]]));

    const { job, out } = totalsJob(storage);
    await job.start({ restore: { savepoint: path }, allowNonRestoredState: true }).done;
    expect(out.values).toEqual([['ann', 21], ['cid', 5]]);
  });

  it('gives values of an unknown serializer as encoded, or decoded with a descriptor', async () => {
    const storage = memoryCheckpointStorage();
    const custom = valueState<Date>('at', { serializer: { id: 'epoch', version: 1, encode: (d) => d.getTime(), decode: (n) => new Date(n as number) } });
    const path = await createSavepoint({ job: 'j' }).withKeyedState('op', custom, [['a', new Date(5)]]).write(storage, 'sp');
    const savepoint = await readSavepoint(storage, path);
    expect(await collectAll(savepoint.keyedState('op', 'at'))).toEqual([['a', 5]]);
    expect(await collectAll(savepoint.keyedState('op', 'at', { descriptor: custom as never }))).toEqual([['a', new Date(5)]]);
  });
});

describe('chunked savepoints', () => {
  /** Per instance more keys than one state file holds (131 072 entries), so each instance's keyed state is several files. */
  const KEYS = 300_000;
  const seen = valueState<boolean>('seen');

  /**
   * A savepoint of a keyed process at parallelism 2 with keyed state per key; each instance also saves operator state
   * (its timers), into the first of its files.
   */
  async function chunkedSavepoint() {
    const storage = memoryCheckpointStorage();
    const paused = pausableSource(Array.from({ length: KEYS + 1 }, (_, i) => `k${i}`), [KEYS]);
    const job = createJob({ name: 'chunked', chunkSize: 4096, checkpoints: { storage } });
    job.source(paused.source, { uid: 'in' }).pipe(
      keyBy((key: string) => key),
      process<string, never>({ onElement: (_key, ctx) => ctx.state(seen).update(true) }, { uid: 'seen', parallelism: 2 }),
      collect<never>().sink({ uid: 'out' }),
    );
    const running = job.start();
    await paused.reached(KEYS);
    const path = (await running.stop({ savepoint: { path: 'savepoints' } })).checkpoints.at(-1)!.path;
    paused.releaseAll();
    return { storage, path };
  }

  it('gives one operator state per instance, not per file, when reading and deriving', async () => {
    const { storage, path } = await chunkedSavepoint();
    const savepoint = await readSavepoint(storage, path);
    expect(savepoint.metadata.operators.find((o) => o.uid === 'seen')!.files.length).toBeGreaterThan(2);
    expect(savepoint.operators.find((o) => o.uid === 'seen')!.parallelism).toBe(2);
    const states = await savepoint.operatorState('seen');
    expect(states).toHaveLength(2);
    for (const state of states) expect(state).toBeDefined();

    const derived = await (await deriveSavepoint(savepoint)).write(storage, 'derived');
    expect(await (await readSavepoint(storage, derived)).operatorState('seen')).toEqual(states);
  });
});

describe('the inspector view', () => {
  it('reads a checkpoint directory too', async () => {
    const storage = fsCheckpointStorage(join(dir, 'cp'));
    const out = outputs();
    const result = await rescaleJob({ checkpoints: { storage } }, fromArray(events), out, 1).start().done;
    const savepoint = await readSavepoint(storage, result.checkpoints.at(-1)!.path);
    expect(savepoint.metadata.kind).toBe('checkpoint');
    expect((await collectAll(savepoint.keyedState('sum', (await savepoint.states('sum'))[0]!.name))).length).toBe(37);
  });
});

describe('TTL state', () => {
  const ttl = { ttl: 60_000 };
  const last = valueState<number>('last', { ttl });
  const pages = listState<string>('pages', { ttl });
  const pageAt = mapState<string, Date>('page-at', { ttl });
  interface Visit {
    user: string;
    page: string;
    n: number;
  }
  const visits: Visit[] = [
    { user: 'ann', page: 'p1', n: 1 },
    { user: 'bob', page: 'p2', n: 2 },
    { user: 'ann', page: 'p3', n: 3 },
    { user: 'bob', page: 'p4', n: 4 },
  ];

  /** A savepoint taken after the first three visits, of states saved with their last-access times. */
  async function ttlSavepoint() {
    const storage = memoryCheckpointStorage();
    const paused = pausableSource(visits, [3]);
    const job = createJob({ name: 'ttl-visits', chunkSize: 1, checkpoints: { storage } });
    job
      .source(paused.source, { uid: 'in' })
      .pipe(
        keyBy((v: Visit) => v.user),
        process<Visit, never>(
          {
            onElement(v, ctx) {
              ctx.state(last).update(v.n);
              ctx.state(pages).add(v.page);
              ctx.state(pageAt).put(v.page, new Date(v.n));
            },
          },
          { uid: 'per-user', parallelism: 2 },
        ),
      )
      .pipe(collect<never>().sink({ uid: 'out' }));
    const running = job.start();
    await paused.reached(3);
    const path = (await running.stop({ savepoint: { path: 'savepoints' } })).checkpoints.at(-1)!.path;
    paused.releaseAll();
    return { storage, path };
  }

  it("reads a TTL state's values as the job stored them, without their access times, with or without its descriptor", async () => {
    const { storage, path } = await ttlSavepoint();
    const savepoint = await readSavepoint(storage, path);
    const read = async (name: string, descriptor?: unknown) => new Map(await collectAll(savepoint.keyedState('per-user', name, descriptor ? { descriptor: descriptor as never } : {})));
    const expected = {
      last: new Map([['ann', 3], ['bob', 2]]),
      pages: new Map([['ann', ['p1', 'p3']], ['bob', ['p2']]]),
      'page-at': new Map([['ann', new Map([['p1', new Date(1)], ['p3', new Date(3)]])], ['bob', new Map([['p2', new Date(2)]])]]),
    };
    for (const [name, descriptor] of [['last', last], ['pages', pages], ['page-at', pageAt]] as const) {
      expect(await read(name)).toEqual(expected[name]);
      expect(await read(name, descriptor)).toEqual(expected[name]);
    }
  });

  /** A job over ann's and bob's first visits emitting what each one's TTL states hold (restored, as it writes none). */
  function restoredVisitsJob(storage: ReturnType<typeof memoryCheckpointStorage>) {
    const out = collect<[string, number | undefined, string[], [string, Date][]]>();
    const job = createJob({ name: 'ttl-visits', checkpoints: { storage } });
    job
      .source(fromArray(visits.slice(0, 2)), { uid: 'in' })
      .pipe(
        keyBy((v: Visit) => v.user),
        process<Visit, [string, number | undefined, string[], [string, Date][]]>(
          {
            onElement(v, ctx, o) {
              o.emit([v.user, ctx.state(last).value(), ctx.state(pages).get(), ctx.state(pageAt).entries()]);
            },
          },
          { uid: 'per-user', parallelism: 3 },
        ),
        out.sink({ uid: 'out' }),
      );
    return { job, out };
  }

  /** A bootstrapped savepoint of the three TTL states, stamped by `clock` (the wall clock by default). */
  function bootstrapVisits(storage: ReturnType<typeof memoryCheckpointStorage>, path: string, clock?: StateClock) {
    return createSavepoint({ job: 'ttl-visits', ...(clock ? { clock } : {}) })
      .withKeyedState('per-user', last, [['ann', 3], ['bob', 2]], { parallelism: 2 })
      .withKeyedState('per-user', pages, [['ann', ['p1', 'p3']], ['bob', ['p2']]])
      .withKeyedState('per-user', pageAt, [['ann', new Map([['p1', new Date(1)], ['p3', new Date(3)]])]])
      .write(storage, path);
  }

  it('bootstraps TTL state stored as a job stores it, stamped now, which a job restores and readSavepoint unwraps', async () => {
    const storage = memoryCheckpointStorage();
    const at = 1_000;
    const path = await bootstrapVisits(storage, 'at-1000', { processingTime: () => at, eventTime: () => at });
    const savepoint = await readSavepoint(storage, path);
    expect(new Map(await collectAll(savepoint.keyedState('per-user', 'last')))).toEqual(new Map([['ann', 3], ['bob', 2]]));
    expect(new Map(await collectAll(savepoint.keyedState('per-user', 'pages', { descriptor: pages as never })))).toEqual(new Map([['ann', ['p1', 'p3']], ['bob', ['p2']]]));
    expect(await collectAll(savepoint.keyedState('per-user', 'page-at', { descriptor: pageAt as never }))).toEqual([['ann', new Map([['p1', new Date(1)], ['p3', new Date(3)]])]]);
    const entries = (await readCheckpointEntries(storage, path)).get('per-user')!;
    expect(entries.get('last')!.map((entry) => entry.lastAccess)).toEqual([at, at]);
    expect(entries.get('pages')!.find((entry) => entry.key === 'ann')!.lastAccess).toEqual([at, at]);

    // Stamped at the writer's now: live for a job restoring it within the TTL (on the wall clock), expired for a job
    // whose clock is more than the TTL (60 s) past `at`.
    const live = restoredVisitsJob(storage);
    await live.job.start({ restore: { savepoint: await bootstrapVisits(storage, 'now') } }).done;
    expect(live.out.values).toEqual([
      ['ann', 3, ['p1', 'p3'], [['p1', new Date(1)], ['p3', new Date(3)]]],
      ['bob', 2, ['p2'], []],
    ]);
    const expired = restoredVisitsJob(storage);
    await expired.job.start({ restore: { savepoint: path } }).done;
    expect(expired.out.values).toEqual([
      ['ann', undefined, [], []],
      ['bob', undefined, [], []],
    ]);
  });

  it('transforms a TTL state offline, keeping its values\' access times', async () => {
    const { storage, path } = await ttlSavepoint();
    const writer = await deriveSavepoint(await readSavepoint(storage, path));
    const derived = await writer
      .transformState('per-user', 'last', (n) => (n as number) * 10)
      .transformState('per-user', 'pages', (list) => (list as string[]).map((page) => page.toUpperCase()))
      .write(storage, 'derived');
    expect(new Map(await collectAll((await readSavepoint(storage, derived)).keyedState('per-user', 'last')))).toEqual(new Map([['ann', 30], ['bob', 20]]));
    const times = async (dir: string, state: string) => {
      const entries = (await readCheckpointEntries(storage, dir)).get('per-user')!.get(state)!;
      return new Map(entries.map((entry) => [entry.key, entry.lastAccess]));
    };
    for (const state of ['last', 'pages']) expect(await times(derived, state)).toEqual(await times(path, state));
    expect((await readCheckpointEntries(storage, derived)).get('per-user')!.get('pages')!.find((entry) => entry.key === 'ann')).toMatchObject({ value: ['P1', 'P3'] });
  });
});
