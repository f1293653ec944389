import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  CheckpointCorruptedError,
  JobDefinitionError,
  collect,
  createJob,
  fromArray,
  fromArrays,
  fromGenerator,
  fromIterable,
  fromObservable,
  fromSplits,
  keyBy,
  memoryCheckpointStorage,
  reduce,
  type CheckpointStorage,
  type JobOptions,
  type Source,
  type SourceReader,
} from 'weir';
import { fromFile } from 'weir/node';
import { of } from 'rxjs';

interface Rec {
  key: string;
  n: number;
}

/** `count` records over `keys` keys, `n` = index, so that per-key sums tell losses and duplicates apart. */
const recordsOf = (count: number, keys: number): Rec[] => Array.from({ length: count }, (_, i) => ({ key: `k${i % keys}`, n: i }));

const sumsOf = (records: readonly Rec[]) => {
  const sums: Record<string, number> = {};
  for (const { key, n } of records) sums[key] = (sums[key] ?? 0) + n;
  return sums;
};

/** The last sum per key of the rolling output: a keyed sum's final state. */
const finals = (values: readonly Rec[]) => Object.fromEntries(values.map((r) => [r.key, r.n]));

function sumJob(source: Source<Rec>, parallelism: number | undefined, options: Partial<JobOptions> = {}) {
  const job = createJob({ name: 'splits', chunkSize: 3, ...options });
  const out = collect<Rec>();
  job
    .source(source, { uid: 'in', ...(parallelism === undefined ? {} : { parallelism }) })
    .pipe(keyBy((r: Rec) => r.key), reduce((a: Rec, b: Rec) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }), out.sink({ uid: 'out' }));
  return { job, out };
}

/**
 * `source` whose readers (of its splits, or its single reader) all stop at their `atRead`-th read (counted over all
 * of them) until `release` is called, and then fail: a crash at a known place, after a checkpoint the test takes.
 */
function crashing<T>(source: Source<T>, atRead: number): { source: Source<T>; release: () => void; reached: Promise<void> } {
  let reads = 0;
  let release!: () => void;
  let reach!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const wrap = (reader: SourceReader<T>): SourceReader<T> => ({
    read(max) {
      if (++reads !== atRead) return reader.read(max);
      reach();
      return released.then(() => Promise.reject(new Error('crash')));
    },
    offset: () => reader.offset(),
    close: () => reader.close?.(),
  });
  const splits = source.splits;
  return {
    source: {
      ...source,
      open: async (context) => wrap(await source.open(context)),
      ...(splits ? { splits: { ...splits, open: async (split, context) => wrap(await splits.open(split, context)) } } : {}),
    },
    release,
    reached,
  };
}

/** Runs `source` at `parallelism` into a checkpoint taken mid-way, crashes it, and restores `restored` at `restoredAt`. */
async function crashAndRestore(source: Source<Rec>, parallelism: number, restored: Source<Rec>, restoredAt: number, atRead = 4) {
  const storage: CheckpointStorage = memoryCheckpointStorage();
  const crash = crashing(source, atRead);
  const first = sumJob(crash.source, parallelism, { checkpoints: { storage }, parallelism });
  const running = first.job.start();
  await crash.reached;
  await running.checkpoint();
  crash.release();
  await expect(running.done).rejects.toThrow('crash');
  const second = sumJob(restored, restoredAt, { checkpoints: { storage }, parallelism: restoredAt });
  await second.job.start({ restore: 'latest' }).done;
  return { before: finals(first.out.values), after: finals(second.out.values) };
}

describe('sources with splits', () => {
  const records = recordsOf(100, 7);
  const expected = sumsOf(records);

  describe.each([
    ['fromArray', () => fromArray(records, { splits: 5 })],
    ['fromIterable', () => fromIterable(new Set(records), { splits: 5 })],
    ['fromGenerator', () => fromGenerator(records.length, (i) => records[i]!, { splits: 5 })],
  ])('%s with splits', (_, source) => {
    it.each([1, 2, 3])('gives the same sums at parallelism %i', async (parallelism) => {
      const { job, out } = sumJob(source(), parallelism, { checkpoints: { storage: memoryCheckpointStorage() } });
      await job.start().done;
      expect(finals(out.values)).toEqual(expected);
    });

    it.each([1, 3])('restores a checkpoint taken at parallelism 2 at parallelism %i: no record lost or doubled', async (restoredAt) => {
      const { before, after } = await crashAndRestore(source(), 2, source(), restoredAt);
      expect(before).not.toEqual(expected);
      expect(after).toEqual(expected);
    });
  });

  it('fromGenerator without splits restores by index: no record lost or doubled', async () => {
    const generated = () => fromGenerator(records.length, (i) => ({ key: `k${i % 7}`, n: i }));
    const { before, after } = await crashAndRestore(generated(), 1, generated(), 1);
    expect(before).not.toEqual(expected);
    expect(after).toEqual(expected);
  });

  it('fromGenerator refuses a count that is not a record count, and a restored offset past its count', async () => {
    expect(() => fromGenerator(-1, (i) => i)).toThrow(JobDefinitionError);
    expect(() => fromGenerator(1.5, (i) => i)).toThrow('count must be an integer ≥ 0, got 1.5');
    await expect(async () => fromGenerator(3, (i) => i).open({ uid: 'in', restoredOffset: 4 })).rejects.toThrow(CheckpointCorruptedError);
  });

  it('restarts every subtask from the latest checkpoint through the restart strategy: no record lost or doubled', async () => {
    const storage = memoryCheckpointStorage();
    const crash = crashing(fromArray(records, { splits: 5 }), 4);
    const { job, out } = sumJob(crash.source, 3, { checkpoints: { storage }, restart: { strategy: 'fixed-delay', attempts: 1, delay: 0 } });
    const running = job.start();
    await crash.reached;
    await running.checkpoint();
    crash.release();
    await running.done;
    expect(finals(out.values)).toEqual(expected);
  });

  it('reads the parts of fromArrays on the subtasks k mod parallelism, so that each subtask owns its keys', async () => {
    const parts = [recordsOf(30, 1), recordsOf(20, 1).map((r) => ({ ...r, key: 'other' })), recordsOf(5, 1).map((r) => ({ ...r, key: 'third' }))];
    for (const parallelism of [1, 2, 3, 4]) {
      const { job, out } = sumJob(fromArrays(parts), parallelism);
      await job.start().done;
      expect(finals(out.values)).toEqual({ ...sumsOf(parts[0]!), ...sumsOf(parts[1]!), ...sumsOf(parts[2]!) });
    }
  });

  it("restores a checkpoint of the source's single reader (written before it had splits) into its splits", async () => {
    const { after } = await crashAndRestore(fromArray(records), 1, fromArray(records, { splits: 4 }), 2, 5);
    expect(after).toEqual(expected);
  });

  it('uses the job parallelism for sources with splits and 1 for the others; more than 1 without splits is refused', () => {
    const job = createJob({ name: 'p', parallelism: 3 });
    expect(job.source(fromArray(records, { splits: 2 }), { uid: 'a' }).node.parallelism).toBe(3);
    expect(job.source(fromArray(records), { uid: 'b' }).node.parallelism).toBe(1);
    expect(() => job.source(fromObservable(of(1)), { uid: 'c', parallelism: 2 })).toThrow(JobDefinitionError);
    expect(() => job.source(fromArray(records), { uid: 'd', parallelism: 2 })).toThrow(/has no splits/);
    expect(() => fromArray(records, { splits: 0 })).toThrow(JobDefinitionError);
  });

  it('refuses a corrupted split state with a CheckpointCorruptedError naming the source', async () => {
    const storage = memoryCheckpointStorage();
    // A source whose offset is a damaged split state, as a checkpoint could hold it.
    const damaged: Source<Rec> = {
      name: 'damaged',
      replayable: true,
      open: () => ({ read: () => [], offset: () => ({ splits: [{ id: 7 }] }) }),
    };
    const first = sumJob(damaged, 1, { checkpoints: { storage } });
    const running = first.job.start();
    await running.checkpoint();
    await running.cancel();
    const second = sumJob(fromArray(records, { splits: 2 }), 2, { checkpoints: { storage } });
    const done = second.job.start({ restore: 'latest' }).done;
    await expect(done).rejects.toThrow(CheckpointCorruptedError);
    await expect(done).rejects.toThrow(/source 'in' \(fromArray\(100 records\)\)/);
  });

  it('refuses a checkpoint of other splits, saying to keep the splits', async () => {
    const storage = memoryCheckpointStorage();
    const crash = crashing(fromArray(records, { splits: 4 }), 3);
    const first = sumJob(crash.source, 2, { checkpoints: { storage } });
    const running = first.job.start();
    await crash.reached;
    await running.checkpoint();
    crash.release();
    await expect(running.done).rejects.toThrow('crash');
    const second = sumJob(fromArray(records, { splits: 3 }), 2, { checkpoints: { storage } });
    await expect(second.job.start({ restore: 'latest' }).done).rejects.toThrow(/keep the same splits/);
  });
});

describe('fromFile with splits', () => {
  let dir: string;
  const records = recordsOf(200, 9);
  const expected = sumsOf(records);
  // Lines of varied length, blank lines and CRLF, so that range boundaries fall inside lines, on newlines, on blanks.
  const text = (list: readonly Rec[]) => list.map((r, i) => `${JSON.stringify(r)}${' '.repeat(i % 5)}${i % 4 === 0 ? '\r\n' : '\n'}${i % 6 === 0 ? '\n' : ''}`).join('');
  const parse = (line: string) => JSON.parse(line) as Rec;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weir-splits-'));
    await writeFile(join(dir, 'all.jsonl'), text(records));
    await writeFile(join(dir, 'a.jsonl'), text(records.slice(0, 70)));
    await writeFile(join(dir, 'b.jsonl'), text(records.slice(70, 71)).trimEnd());
    await writeFile(join(dir, 'c.jsonl'), text(records.slice(71)));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const byteRanges = () => fromFile(join(dir, 'all.jsonl'), { parse, splits: 7, chunkSize: 64 });
  const files = () => fromFile(['a.jsonl', 'b.jsonl', 'c.jsonl'].map((f) => join(dir, f)), { parse, chunkSize: 100 });

  it.each([1, 2, 3])('reads every line once in line-aligned byte ranges and in several files, at parallelism %i', async (parallelism) => {
    for (const source of [byteRanges(), files(), fromFile(join(dir, 'all.jsonl'), { parse, splits: 1000 })]) {
      const { job, out } = sumJob(source, parallelism);
      await job.start().done;
      expect(finals(out.values)).toEqual(expected);
    }
  });

  it.each([1, 3])('restores byte ranges and files checkpointed at parallelism 2 at parallelism %i', async (restoredAt) => {
    for (const source of [byteRanges, files]) {
      const { after } = await crashAndRestore(source(), 2, source(), restoredAt, 5);
      expect(after).toEqual(expected);
    }
  });

  it("restores a checkpoint of one file's single reader into its byte ranges", async () => {
    const single = () => fromFile(join(dir, 'all.jsonl'), { parse, chunkSize: 64 });
    const { after } = await crashAndRestore(single(), 1, byteRanges(), 3, 6);
    expect(after).toEqual(expected);
  });
});

/**
 * A source read side by side (`interleaved`) over `parts` parts of `records` (record i in part i mod parts), each read
 * resolving after its part's delay in ms, so that reads of different parts are in flight together and come back out
 * of turn.
 */
function interleavedParts(records: readonly Rec[], parts: number, delays: readonly number[]): Source<Rec> {
  return fromSplits<Rec>('interleaved parts', {
    interleaved: true,
    list: () => Array.from({ length: parts }, (_, i) => ({ id: `part-${i}`, description: i })),
    open: (split, { restoredOffset }) => {
      const part = split.description as number;
      const mine = records.filter((_, i) => i % parts === part);
      let index = typeof restoredOffset === 'number' ? restoredOffset : 0;
      return {
        read: (max) =>
          new Promise<Rec[] | null>((resolve) =>
            setTimeout(() => {
              if (index >= mine.length) return resolve(null);
              const chunk = mine.slice(index, index + Math.min(max, 2));
              index += chunk.length;
              resolve(chunk);
            }, delays[part]),
          ),
        offset: () => index,
      };
    },
  });
}

describe('sources whose splits are read side by side (interleaved)', () => {
  const records = recordsOf(60, 5);
  const expected = sumsOf(records);

  it('reads every split once, each in its own order, at parallelism 1', async () => {
    const job = createJob({ name: 'interleaved', chunkSize: 4 });
    const out = collect<Rec>();
    job.source(interleavedParts(records, 3, [0, 3, 1]), { uid: 'in', parallelism: 1 }).pipe(out.sink({ uid: 'out' }));
    await job.start().done;
    expect([...out.values].sort((a, b) => a.n - b.n)).toEqual(records);
    for (let part = 0; part < 3; part++) {
      const mine = out.values.filter((r) => r.n % 3 === part).map((r) => r.n);
      expect(mine).toEqual([...mine].sort((a, b) => a - b));
    }
    // Side by side: the parts' records alternate rather than coming part after part.
    const switches = out.values.slice(1).filter((r, i) => r.n % 3 !== out.values[i]!.n % 3).length;
    expect(switches).toBeGreaterThan(3);
  });

  it('follows a split that waits on another: one subtask does not stall on a split with nothing to read', { timeout: 30_000 }, async () => {
    // Split 'waits' has nothing until split 'feeds' has been read to its end: read one after another, it would never end.
    let fed = false;
    const feeding = recordsOf(10, 2);
    const source = fromSplits<Rec>('waiting splits', {
      interleaved: true,
      list: () => [{ id: 'waits', description: 'waits' }, { id: 'feeds', description: 'feeds' }],
      open: (split) => {
        let index = 0;
        return split.id === 'waits'
          ? { read: () => (fed ? null : new Promise<Rec[]>((resolve) => setTimeout(() => resolve([]), 5))), offset: () => 0 }
          : {
              read: () => {
                if (index >= feeding.length) return (fed = true), null;
                return [feeding[index++]!];
              },
              offset: () => index,
            };
      },
    });
    const job = createJob({ name: 'waiting' });
    const out = collect<Rec>();
    job.source(source, { uid: 'in', parallelism: 1 }).pipe(out.sink({ uid: 'out' }));
    await job.start().done;
    expect(out.values).toEqual(feeding);
  });

  it.each([1, 3])('restores a checkpoint taken while reads of several splits were in flight, at parallelism %i: no record lost or doubled', async (restoredAt) => {
    const source = () => interleavedParts(records, 4, [2, 0, 5, 1]);
    const { before, after } = await crashAndRestore(source(), 2, source(), restoredAt, 7);
    expect(before).not.toEqual(expected);
    expect(after).toEqual(expected);
  });

  it('saves only what went out: reads that came back but still wait their turn at a checkpoint are read again after it', async () => {
    const parts = 3;
    // First run: every read waits for the test, which lets all of a round come back at once and then fails the rest.
    const held: { release: () => void; fail: () => void }[] = [];
    const gated = (hold: boolean) =>
      fromSplits<Rec>('gated parts', {
        interleaved: true,
        list: () => Array.from({ length: parts }, (_, i) => ({ id: `part-${i}`, description: i })),
        open: (split, { restoredOffset }) => {
          const mine = records.filter((_, i) => i % parts === (split.description as number));
          let index = typeof restoredOffset === 'number' ? restoredOffset : 0;
          const chunk = () => mine.slice(index, (index += 4) - 0);
          return {
            read: () => {
              if (index >= mine.length) return null;
              if (!hold) return chunk();
              return new Promise<Rec[]>((resolve, reject) => held.push({ release: () => resolve(chunk()), fail: () => reject(new Error('crash')) }));
            },
            offset: () => Math.min(index, mine.length),
          };
        },
      });
    const storage = memoryCheckpointStorage();
    const first = sumJob(gated(true), 1, { checkpoints: { storage } });
    const running = first.job.start();
    await vi.waitFor(() => expect(held).toHaveLength(parts), { timeout: 30_000, interval: 10 });
    // All three come back together; the runner hands out one, and the barrier goes in while two wait their turn.
    for (const read of held.splice(0)) read.release();
    await running.checkpoint();
    await vi.waitFor(() => expect(held.length).toBeGreaterThan(0), { timeout: 30_000, interval: 10 });
    for (const read of held.splice(0)) read.fail();
    await expect(running.done).rejects.toThrow('crash');

    const second = sumJob(gated(false), 1, { checkpoints: { storage } });
    await second.job.start({ restore: 'latest' }).done;
    expect(finals(second.out.values)).toEqual(expected);
  });
});
