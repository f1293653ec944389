import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CheckpointCorruptedError,
  collect,
  createJob,
  fold,
  ForeignCheckpointError,
  fromArray,
  keyBy,
  NonRestoredStateError,
  reduce,
  StateMigrationError,
  type StateBackend,
} from 'weir';
import { fsCheckpointStorage, lmdbStateBackend } from 'weir/node';
import { byKeyThenN, events, outputs, pausableSource, rescaleJob, snapshotTree, tempDir, type Ev } from '../support/savepointFixtures';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

/** What the rescale job emits when it runs through without stopping. */
async function unstoppedRun() {
  const out = outputs();
  await rescaleJob({}, fromArray(events), out, 1).start().done;
  return { sums: out.sums.values, windows: [...out.windows.values].sort(byKeyThenN) };
}

/** Runs the job up to event `at`, stops it with a savepoint and returns the savepoint's path. */
async function stopWithSavepointAt(at: number, out = outputs(), options: { stateBackend?: StateBackend; parallelism?: number } = {}) {
  const paused = pausableSource(events, [at]);
  const running = rescaleJob({ checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) }, stateBackend: options.stateBackend }, paused.source, out, options.parallelism ?? 1).start();
  await paused.reached(at);
  const result = await running.stop({ savepoint: { path: join(dir, 'savepoints') } });
  paused.releaseAll();
  return { result, path: result.checkpoints.at(-1)!.path, out };
}

describe('savepoints', () => {
  it('running.savepoint() writes a savepoint from which a new job continues exactly', async () => {
    const expected = await unstoppedRun();
    const paused = pausableSource(events, [200]);
    const first = outputs();
    const running = rescaleJob({ checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } }, paused.source, first, 1).start();
    await paused.reached(200);
    const savepoint = await running.savepoint({ path: join(dir, 'savepoints') });
    expect(savepoint.kind).toBe('savepoint');
    expect(savepoint.path).toMatch(new RegExp(`^${join(dir, 'savepoints')}/savepoint-rescale-${savepoint.id}-[0-9a-f]{8}$`));
    paused.release(200);
    await running.done;
    expect(first.sums.values).toEqual(expected.sums);

    const second = outputs();
    const result = await rescaleJob({ checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } }, fromArray(events), second, 1)
      .start({ restore: { savepoint: savepoint.path } })
      .done;
    expect(result.restoredFrom).toBe(savepoint.path);
    expect(second.sums.values).toEqual(expected.sums.slice(200));
  });

  it('stop({ savepoint }) stops the sources, drains, takes a final savepoint, commits the sinks and ends the job', async () => {
    const expected = await unstoppedRun();
    const { result, path, out } = await stopWithSavepointAt(200);
    expect(result.status).toBe('stopped');
    expect(result.checkpoints.map((c) => [c.kind, c.final])).toEqual([['savepoint', true]]);
    expect(await readdir(path)).toContain('_metadata');
    // Everything before the savepoint was committed, nothing after it was read.
    expect(out.sums.values).toEqual(expected.sums.slice(0, 200));
    // Windows still open are in the savepoint, not fired.
    expect(out.windows.values.every((w) => w.n < 200 * 200)).toBe(true);

    const rest = await rescaleJob({ checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } }, fromArray(events), out, 1)
      .start({ restore: { savepoint: path } })
      .done;
    expect(rest.status).toBe('finished');
    expect(out.sums.values).toEqual(expected.sums);
    expect([...out.windows.values].sort(byKeyThenN)).toEqual(expected.windows);
  });

  it('moves between the heap and the LMDB state backend and back', async () => {
    const expected = await unstoppedRun();
    const out = outputs();
    const paused = pausableSource(events, [100, 250]);
    const storage = fsCheckpointStorage(join(dir, 'checkpoints'));
    const heapRun = rescaleJob({ checkpoints: { storage } }, paused.source, out, 2).start();
    await paused.reached(100);
    const fromHeap = (await heapRun.stop({ savepoint: { path: join(dir, 'savepoints') } })).checkpoints.at(-1)!.path;
    paused.release(100);

    const lmdbRun = rescaleJob({ checkpoints: { storage }, stateBackend: lmdbStateBackend({ path: join(dir, 'lmdb') }) }, paused.source, out, 3).start({
      restore: { savepoint: fromHeap },
    });
    await paused.reached(250);
    const fromLmdb = (await lmdbRun.stop({ savepoint: { path: join(dir, 'savepoints') } })).checkpoints.at(-1)!.path;
    paused.release(250);

    await rescaleJob({ checkpoints: { storage } }, fromArray(events), out, 1).start({ restore: { savepoint: fromLmdb } }).done;
    expect(out.sums.values).toEqual(expected.sums);
    expect([...out.windows.values].sort(byKeyThenN)).toEqual(expected.windows);
  });

  it('are never deleted by the job: checkpoint retention leaves them alone', async () => {
    const paused = pausableSource(events, [100]);
    const storage = fsCheckpointStorage(join(dir, 'checkpoints'));
    const running = rescaleJob({ checkpoints: { storage, retain: 1 } }, paused.source, outputs(), 1).start();
    await paused.reached(100);
    const savepoint = await running.savepoint({ path: 'savepoints' });
    await running.checkpoint();
    await running.checkpoint();
    paused.release(100);
    const result = await running.done;
    expect(savepoint.path).toMatch(new RegExp(`^${join(dir, 'checkpoints', 'savepoints')}/savepoint-rescale-${savepoint.id}-[0-9a-f]{8}$`));
    expect(await readdir(savepoint.path)).toContain('_metadata');
    expect(await readdir(join(dir, 'checkpoints', 'rescale'))).toEqual([`chk-${result.checkpoints.at(-1)!.id}`]);
    // …and it still restores.
    await rescaleJob({ checkpoints: { storage } }, fromArray(events), outputs(), 1).start({ restore: { savepoint: savepoint.path } }).done;
  });
});

describe('operator identity', () => {
  const storage = () => fsCheckpointStorage(join(dir, 'checkpoints'));

  /** The rescale job without its window operator. */
  function sumsOnly(out = collect<Ev>()) {
    const job = createJob({ name: 'rescale', chunkSize: 10, checkpoints: { storage: storage() } });
    job.source(fromArray(events), { uid: 'in' }).pipe(
      keyBy((e: Ev) => e.key),
      reduce((a: Ev, b: Ev) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
      out.sink({ uid: 'sums-out' }),
    );
    return job;
  }

  it('rejects state of a removed operator with NonRestoredStateError naming its uids', async () => {
    const { path } = await stopWithSavepointAt(200);
    const error = await sumsOnly().start({ restore: { savepoint: path } }).done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NonRestoredStateError);
    expect((error as Error).message).toContain(`'win'`);
    expect((error as Error).message).toContain(`'win-out'`);
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).toContain('allowNonRestoredState');
  });

  it('drops that state with allowNonRestoredState and keeps the rest', async () => {
    const expected = await unstoppedRun();
    const { path } = await stopWithSavepointAt(200);
    const out = collect<Ev>();
    await sumsOnly(out).start({ restore: { savepoint: path }, allowNonRestoredState: true }).done;
    expect(out.values).toEqual(expected.sums.slice(200));
  });

  it('restores a savepoint another job name took when restore.job names that job (a scale-out group started from another)', async () => {
    const expected = await unstoppedRun();
    const { path } = await stopWithSavepointAt(200);
    const out = outputs();
    const result = await rescaleJob({ name: 'renamed', checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } }, fromArray(events), out, 2)
      .start({ restore: { savepoint: path, job: 'rescale' } })
      .done;
    expect(result.restoredFrom).toBe(path);
    expect(out.sums.values).toEqual(expected.sums.slice(200));
  });

  it('starts a new operator without saved state empty', async () => {
    const expected = await unstoppedRun();
    const { path } = await stopWithSavepointAt(200);
    const counts = collect<[string, number]>();
    const job = rescaleJob({ checkpoints: { storage: storage() } }, fromArray(events), outputs(), 1);
    // A flow from a new source, with a new keyed operator: neither has saved state.
    job
      .source(fromArray(events.slice(200)), { uid: 'in-2' })
      .pipe(keyBy((e: Ev) => e.key), fold<Ev, [string, number]>(['', 0], (acc, e) => [e.key, acc[1] + 1], { uid: 'count' }), counts.sink({ uid: 'count-out' }));
    await job.start({ restore: { savepoint: path } }).done;
    const firstPerKey = new Map<string, number>();
    for (const [key, n] of counts.values) if (!firstPerKey.has(key)) firstPerKey.set(key, n);
    expect(new Set(firstPerKey.values())).toEqual(new Set([1]));
    expect(expected.sums.length).toBe(events.length);
  });
});

describe('bad savepoints', () => {
  /** Restores `path` with `job`, expects `type` naming the path, and checks the savepoint's bytes did not change. */
  async function expectRejected(path: string, start: () => Promise<unknown>, type: new (...args: never[]) => Error, mentions: string[]) {
    const before = await snapshotTree(path);
    const error = await start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    for (const text of mentions) expect((error as Error).message).toContain(text);
    expect(await snapshotTree(path)).toEqual(before);
  }

  const restoreWith = (path: string, options: { name?: string; maxParallelism?: number } = {}) => () =>
    rescaleJob({ ...options, checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } }, fromArray(events), outputs(), 2)
      .start({ restore: { savepoint: path } })
      .done;

  it('a savepoint of another job is a ForeignCheckpointError', async () => {
    const { path } = await stopWithSavepointAt(100);
    await expectRejected(path, restoreWith(path, { name: 'other' }), ForeignCheckpointError, [path, `'rescale'`]);
  });

  it('a maxParallelism change is a StateMigrationError', async () => {
    const { path } = await stopWithSavepointAt(100);
    await expectRejected(path, restoreWith(path, { maxParallelism: 64 }), StateMigrationError, [path, 'maxParallelism 128', '64']);
  });

  it('an unknown or newer format version is a CheckpointCorruptedError naming the file and version', async () => {
    const { path } = await stopWithSavepointAt(100);
    const { readFile, writeFile } = await import('node:fs/promises');
    const metadata = join(path, '_metadata');
    await writeFile(metadata, (await readFile(metadata, 'utf8')).replace('"version":1', '"version":99'));
    await expectRejected(path, restoreWith(path), CheckpointCorruptedError, [metadata, 'format version 99']);
  });

  it('a damaged state file is a CheckpointCorruptedError naming it, and the savepoint stays as it was', async () => {
    const { path } = await stopWithSavepointAt(100);
    const { readFile, writeFile } = await import('node:fs/promises');
    const file = (await readdir(path)).find((name) => name.startsWith('sum.'))!;
    const bytes = await readFile(join(path, file));
    bytes[bytes.length - 2]! ^= 1;
    await writeFile(join(path, file), bytes);
    await expectRejected(path, restoreWith(path), CheckpointCorruptedError, [join(path, file), 'checksum']);
  });

  it('a missing savepoint is a CheckpointNotFoundError naming the path', async () => {
    const error = await restoreWith(join(dir, 'nope'))().catch((e: unknown) => e);
    expect((error as Error).name).toBe('CheckpointNotFoundError');
    expect((error as Error).message).toContain(join(dir, 'nope'));
  });
});
