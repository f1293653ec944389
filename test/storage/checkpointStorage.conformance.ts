import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CheckpointDirectoryLockedError,
  CheckpointNotFoundError,
  collect,
  createJob,
  keyBy,
  memoryCheckpointStorage,
  process,
  readSavepoint,
  valueState,
  type CheckpointStorage,
  type Collector,
  type Source,
} from 'weir';
import { CHUNK, pausableSource } from '../checkpoint/jobFixtures';

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

/** The optional members of `CheckpointStorage` a storage has; the suite checks each one it declares, and that it has no other. */
export interface StorageCapabilities {
  /** `writeStructured` with `readStructured`: rich values kept beside a file's bytes. */
  writeStructured: boolean;
  /** `lock`: one run of a job at a time on the storage. */
  lock: boolean;
}

/**
 * The behaviour every `CheckpointStorage` must have, and that of the optional capabilities it declares; each
 * storage's test file runs it with a factory that makes an empty storage (and optionally cleans it up afterwards).
 * A storage without a capability is checked to work with the engine all the same.
 * @example describeCheckpointStorage('memory', async () => ({ storage: memoryCheckpointStorage() }), { writeStructured: false, lock: false })
 */
export function describeCheckpointStorage(
  name: string,
  create: () => Promise<{ storage: CheckpointStorage; cleanup?: () => Promise<void> }>,
  capabilities: StorageCapabilities,
): void {
  describe(`${name} checkpoint storage (conformance)`, () => {
    let storage: CheckpointStorage;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ storage, cleanup } = await create());
    });
    afterEach(async () => {
      await cleanup?.();
    });

    it('reads back what it wrote', async () => {
      await storage.write('job/chk-1/_metadata', bytes('hello'));
      expect(text(await storage.read('job/chk-1/_metadata'))).toBe('hello');
    });

    it('replaces a file on overwrite', async () => {
      await storage.write('a', bytes('first, and longer'));
      await storage.write('a', bytes('second'));
      expect(text(await storage.read('a'))).toBe('second');
    });

    it('rejects a read of a missing file with CheckpointNotFoundError naming it', async () => {
      await expect(storage.read('job/chk-9/_metadata')).rejects.toThrow(CheckpointNotFoundError);
      await expect(storage.read('job/chk-9/_metadata')).rejects.toThrow(/chk-9\/_metadata/);
    });

    it('lists the direct children of a directory: files and subdirectories', async () => {
      await storage.write('job/chk-1/_metadata', bytes('m'));
      await storage.write('job/chk-1/op.0', bytes('s'));
      await storage.write('job/chk-2/deep/nested/file', bytes('n'));
      await storage.write('job/top', bytes('t'));
      await storage.write('other/x', bytes('x'));

      expect((await storage.list('job')).sort()).toEqual(['chk-1', 'chk-2', 'top']);
      expect((await storage.list('job/chk-1')).sort()).toEqual(['_metadata', 'op.0']);
      expect(await storage.list('job/chk-2')).toEqual(['deep']);
      expect(await storage.list('job/chk-2/deep/nested')).toEqual(['file']);
      expect((await storage.list('')).sort()).toEqual(['job', 'other']);
    });

    it('lists names that sort right before and after a directory (characters below and above /)', async () => {
      await storage.write('job/c.txt', bytes('before'));
      await storage.write('job/c!x', bytes('before'));
      await storage.write('job/c/inner', bytes('dir'));
      await storage.write('job/c/deeper/file', bytes('dir'));
      await storage.write('job/c0', bytes('after'));
      await storage.write('job/d/inner', bytes('dir'));
      expect((await storage.list('job')).sort()).toEqual(['c', 'c!x', 'c.txt', 'c0', 'd'].sort());
      expect((await storage.list('job/c')).sort()).toEqual(['deeper', 'inner']);
    });

    it('lists a missing directory as empty', async () => {
      expect(await storage.list('nothing/here')).toEqual([]);
    });

    it('removes a file and leaves its siblings', async () => {
      await storage.write('job/chk-1/a', bytes('a'));
      await storage.write('job/chk-1/b', bytes('b'));
      await storage.remove('job/chk-1/a');
      await expect(storage.read('job/chk-1/a')).rejects.toThrow(CheckpointNotFoundError);
      expect(await storage.list('job/chk-1')).toEqual(['b']);
    });

    it('removes a directory with everything under it, and nothing beside it', async () => {
      await storage.write('job/chk-1/_metadata', bytes('m'));
      await storage.write('job/chk-1/sub/file', bytes('f'));
      await storage.write('job/chk-10/_metadata', bytes('keep'));
      await storage.remove('job/chk-1');
      expect(await storage.list('job')).toEqual(['chk-10']);
      expect(await storage.list('job/chk-1')).toEqual([]);
      expect(text(await storage.read('job/chk-10/_metadata'))).toBe('keep');
    });

    it('removes a missing path without error', async () => {
      await expect(storage.remove('never/written')).resolves.toBeUndefined();
    });

    it('keeps its own copy of the bytes', async () => {
      const data = bytes('original');
      await storage.write('copy', data);
      data.fill(0);
      const read = await storage.read('copy');
      expect(text(read)).toBe('original');
      read.fill(0);
      expect(text(await storage.read('copy'))).toBe('original');
    });

    it('round-trips a large file', async () => {
      const large = new Uint8Array(8 * 1024 * 1024);
      for (let i = 0; i < large.length; i += 1) large[i] = (i * 31) & 0xff;
      await storage.write('job/chk-1/large', large);
      const read = await storage.read('job/chk-1/large');
      expect(read.length).toBe(large.length);
      // A loop rather than Buffer.compare: the suite also runs in the browser, which has no Buffer.
      expect(read.findIndex((byte, i) => byte !== large[i])).toBe(-1);
    });

    it('has the optional capabilities it declares, and no others', () => {
      expect(typeof storage.writeStructured === 'function').toBe(capabilities.writeStructured);
      expect(typeof storage.readStructured === 'function').toBe(capabilities.writeStructured);
      expect(typeof storage.lock === 'function').toBe(capabilities.lock);
    });

    describe('a job on it', () => {
      it('restores rich state values (Map, Set, Date, BigInt) exactly from a checkpoint', async () => {
        const whole = collect<string>();
        await visitsJob(memoryCheckpointStorage(), pausableSource(visits, []).source, whole).start().done;

        const paused = pausableSource(visits, [40]);
        const before = collect<string>();
        const running = visitsJob(storage, paused.source, before).start();
        await paused.reached(40);
        const stats = await running.checkpoint();
        await running.cancel();
        paused.release(40);
        const after = collect<string>();
        const rerun = visitsJob(storage, paused.source, after).start({ restore: 'latest' });
        await rerun.done;
        expect(rerun.restoredFrom?.id).toBe(stats.id);
        expect([...before.values.slice(0, 40), ...after.values]).toEqual(whole.values);
      });

      it('has its checkpoints read without the job, rich values included (State Processor API, inspector)', async () => {
        const stats = await checkpointAt(storage, 40);
        const reader = await readSavepoint(storage, stats.path);
        const users = new Map<unknown, Seen>();
        for await (const [user, value] of reader.keyedState('seen', 'seen')) users.set(user, value as Seen);
        expect([...users.keys()].sort()).toEqual(['u0', 'u1', 'u2', 'u3']);
        expect(users.get('u1')).toEqual(seenAfter(40, 'u1'));
      });
    });

    if (capabilities.writeStructured) {
      describe('writeStructured', () => {
        const rich = () => [new Map([['a', 1]]), new Set(['x']), new Date(1_700_000_000_000), 12n, { nested: [new Map([[1, new Set([2n])]])] }];

        it('keeps the values beside the bytes, and readStructured gives both back', async () => {
          await storage.writeStructured!('job/chk-1/op.0', bytes('state'), rich());
          const { data, values } = await storage.readStructured!('job/chk-1/op.0');
          expect(text(data)).toBe('state');
          expect(values).toEqual(rich());
          expect(values[0]).toBeInstanceOf(Map);
          expect(values[2]).toBeInstanceOf(Date);
        });

        it('gives the bytes alone to read, and no values for a file written by write', async () => {
          await storage.writeStructured!('job/chk-1/structured', bytes('s'), rich());
          await storage.write('job/chk-1/plain', bytes('p'));
          expect(text(await storage.read('job/chk-1/structured'))).toBe('s');
          expect(await storage.readStructured!('job/chk-1/plain')).toEqual({ data: bytes('p'), values: [] });
        });

        it('replaces the values with the file: an overwrite by write leaves none', async () => {
          await storage.writeStructured!('a', bytes('first'), rich());
          await storage.write('a', bytes('second'));
          expect(await storage.readStructured!('a')).toEqual({ data: bytes('second'), values: [] });
          await storage.writeStructured!('a', bytes('third'), [1n]);
          expect(await storage.readStructured!('a')).toEqual({ data: bytes('third'), values: [1n] });
        });

        it('keeps its own copy of the values', async () => {
          const values = rich();
          await storage.writeStructured!('copy', bytes('c'), values);
          (values[0] as Map<string, number>).set('b', 2);
          const read = await storage.readStructured!('copy');
          (read.values[1] as Set<string>).add('y');
          expect((await storage.readStructured!('copy')).values).toEqual(rich());
        });

        it('rejects readStructured of a missing file with CheckpointNotFoundError naming it', async () => {
          await expect(storage.readStructured!('job/chk-9/op.0')).rejects.toThrow(CheckpointNotFoundError);
          await expect(storage.readStructured!('job/chk-9/op.0')).rejects.toThrow(/chk-9\/op\.0/);
        });

        it('lists and removes structured files as any other', async () => {
          await storage.writeStructured!('job/chk-1/op.0', bytes('s'), rich());
          await storage.write('job/chk-1/_metadata', bytes('m'));
          expect((await storage.list('job/chk-1')).sort()).toEqual(['_metadata', 'op.0']);
          await storage.remove('job/chk-1');
          await expect(storage.readStructured!('job/chk-1/op.0')).rejects.toThrow(CheckpointNotFoundError);
        });

        it("receives a checkpoint's rich state values beside its state file, and none of a savepoint's", async () => {
          const stats = await checkpointAt(storage, 40);
          expect((await seenFile(storage, stats.path)).values).toHaveLength(4);
          const savepoint = await savepointAt(storage, 40);
          expect((await seenFile(storage, savepoint.path)).values).toEqual([]);
        });
      });
    }

    if (capabilities.lock) {
      describe('lock', () => {
        it("refuses a job's lock while it is held, with CheckpointDirectoryLockedError naming the job, and grants it once released", async () => {
          const held = await storage.lock!('job');
          const refused = storage.lock!('job');
          await expect(refused).rejects.toThrow(CheckpointDirectoryLockedError);
          await expect(refused).rejects.toThrow(/'job'/);
          const other = await storage.lock!('other');
          await held.release();
          await held.release();
          const again = await storage.lock!('job');
          await Promise.all([again.release(), other.release()]);
        });

        it('is held by a running job, which refuses a second run of the job and gives the lock up when it ends', async () => {
          const paused = pausableSource(visits, [40]);
          const running = visitsJob(storage, paused.source, collect<string>()).start();
          await paused.reached(40);
          await expect(storage.lock!('visits')).rejects.toThrow(CheckpointDirectoryLockedError);
          await expect(visitsJob(storage, pausableSource(visits, []).source, collect<string>()).start().done).rejects.toThrow(CheckpointDirectoryLockedError);
          paused.release(40);
          await running.done;
          await (await storage.lock!('visits')).release();
        });
      });
    }
  });
}

interface Visit {
  user: string;
  page: string;
  at: number;
}

/** Per user: the pages seen, when last seen, how many visits (a bigint), visits per page: values JSON cannot hold. */
interface Seen {
  pages: Set<string>;
  last: Date;
  visits: bigint;
  byPage: Map<string, number>;
}

const visits: Visit[] = Array.from({ length: 60 }, (_, n) => ({ user: `u${n % 4}`, page: `p${n % 7}`, at: 1_700_000_000_000 + n * 1000 }));

const seen = valueState<Seen>('seen');

/** What `visitsJob` holds for `user` once it has read the first `count` visits. */
function seenAfter(count: number, user: string): Seen {
  const own = visits.slice(0, count).filter((visit) => visit.user === user);
  const byPage = new Map<string, number>();
  for (const visit of own) byPage.set(visit.page, (byPage.get(visit.page) ?? 0) + 1);
  return { pages: new Set(own.map((visit) => visit.page)), last: new Date(own.at(-1)!.at), visits: BigInt(own.length), byPage };
}

/** A keyed job whose state is `Seen` per user, and whose output tells every part of it. */
function visitsJob(storage: CheckpointStorage, source: Source<Visit>, out: Collector<string>) {
  const job = createJob({ name: 'visits', chunkSize: CHUNK, checkpoints: { storage, retain: 2 } });
  job.source(source, { uid: 'visits' }).pipe(
    keyBy((visit: Visit) => visit.user),
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
          };
          state.update(next);
          emit.emit(`${visit.user}:${next.visits}:${[...next.pages].join(',')}:${next.last.toISOString()}:${next.byPage.get(visit.page)}`);
        },
      },
      { uid: 'seen' },
    ),
    out.sink({ uid: 'out' }),
  );
  return job;
}

/** A checkpoint of `visitsJob` taken after its first `count` visits; the run is cancelled after it. */
async function checkpointAt(storage: CheckpointStorage, count: number) {
  const paused = pausableSource(visits, [count]);
  const running = visitsJob(storage, paused.source, collect<string>()).start();
  await paused.reached(count);
  const stats = await running.checkpoint();
  await running.cancel();
  return stats;
}

/** A savepoint of `visitsJob` taken after its first `count` visits; the run is cancelled after it. */
async function savepointAt(storage: CheckpointStorage, count: number) {
  const paused = pausableSource(visits, [count]);
  const running = visitsJob(storage, paused.source, collect<string>()).start();
  await paused.reached(count);
  const savepoint = await running.savepoint();
  await running.cancel();
  return savepoint;
}

/** The one state file of the `seen` operator under `dir`, with the values its storage keeps beside it. */
async function seenFile(storage: CheckpointStorage, dir: string) {
  const files = (await storage.list(dir)).filter((name) => name.startsWith('seen.'));
  expect(files).toHaveLength(1);
  return storage.readStructured!(`${dir}/${files[0]}`);
}
