import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collect, createJob, fromArray, heapStateBackend, keyBy, memoryCheckpointStorage, reduce, sinkTo, type CheckpointStorage, type StateBackend } from 'weir';
import { fsCheckpointStorage, lmdbStateBackend } from 'weir/node';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-chunked-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Count {
  key: string;
  n: number;
}

/** More keys than one state file holds (131 072 entries), so keyed state is written as several files. */
const KEYS = 200_000;

function sumJob(stateBackend: StateBackend, records: Count[]) {
  const job = createJob({ name: 'chunked', stateBackend, chunkSize: 4096, checkpoints: { storage: fsCheckpointStorage(join(dir, 'chk')) } });
  const out = collect<Count>();
  job
    .source(fromArray(records), { uid: 'in' })
    .pipe(
      keyBy((c: Count) => c.key),
      reduce((a: Count, b: Count) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
    )
    .pipe(out.sink({ uid: 'out' }));
  return { job, out };
}

const backends: [string, () => StateBackend][] = [
  ['heap', () => heapStateBackend()],
  ['lmdb', () => lmdbStateBackend({ path: join(dir, 'lmdb') })],
];

describe.each(backends)('keyed state larger than one state file, on the %s backend', (_name, backend) => {
  it('is written as one file per chunk of key groups, each listed in _metadata, and restores whole', async () => {
    const first = Array.from({ length: KEYS }, (_, i) => ({ key: `k${i}`, n: i }));
    const one = sumJob(backend(), first);
    await one.job.start().done;

    const chk = join(dir, 'chk', 'chunked', 'chk-1');
    const files = (await readdir(chk)).filter((name) => name.startsWith('sum.'));
    expect(files.length).toBeGreaterThan(1);
    for (const file of files) expect(file).toMatch(/^sum\.0\.kg-\d+-\d+\.\d+$/);
    const metadata = JSON.parse((await readFile(join(chk, '_metadata'), 'utf8')).split('\n')[1]!) as {
      operators: { uid: string; files: { file: string; keyGroups: [number, number] }[] }[];
    };
    const listed = metadata.operators.find((operator) => operator.uid === 'sum')!.files;
    expect(listed.map((entry) => entry.file).sort()).toEqual(files.sort());
    const ranges = listed.map((entry) => entry.keyGroups);
    // Chunks of key groups follow each other; the heap backend's unbucketed chunks each list the instance's range.
    if (_name === 'heap') for (const range of ranges) expect(range).toEqual([0, 127]);
    else for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBeGreaterThanOrEqual(ranges[i - 1]![1]);

    // A restored job continues every key's sum from the checkpoint.
    const second = [...first, ...Array.from({ length: 50 }, (_, i) => ({ key: `k${i * 1999}`, n: 1 }))];
    const two = sumJob(backend(), second);
    const result = await two.job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBe('chunked/chk-1');
    expect(two.out.values).toEqual(Array.from({ length: 50 }, (_, i) => ({ key: `k${i * 1999}`, n: i * 1999 + 1 })));
  }, 60_000);
});

describe('keyed state past the budget a restore keeps decoded from load to restore (16 MiB)', () => {
  /**
   * ~33 MB of state in three files: the files past the budget are checked at load, and parsed only when restored.
   * (Values are written as rows of their fields, without their field names: the pad makes up for them.)
   */
  const big = Array.from({ length: 300_000 }, (_, i) => ({ key: `k${i}`, n: i, pad: 'x'.repeat(80) }));
  const padJob = (records: typeof big, warnings: string[] = []) => {
    const job = createJob({ name: 'big', chunkSize: 8192, checkpoints: { storage: fsCheckpointStorage(join(dir, 'chk')) }, onWarning: (m) => warnings.push(m) });
    const out = collect<(typeof big)[number]>();
    job
      .source(fromArray(records), { uid: 'in' })
      .pipe(keyBy((c) => c.key), reduce((a, b) => ({ key: a.key, n: a.n + b.n, pad: a.pad }), { uid: 'sum' }))
      .pipe(out.sink({ uid: 'out' }));
    return { job, out };
  };

  it('restores every file, read once more past the budget', async () => {
    await padJob(big).job.start().done;
    const sizes = await Promise.all(
      (await readdir(join(dir, 'chk', 'big', 'chk-1'))).filter((name) => name.startsWith('sum.')).map(async (name) => (await readFile(join(dir, 'chk', 'big', 'chk-1', name))).length),
    );
    expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(16 * 1024 * 1024 + Math.max(...sizes));
    const more = [...big, ...[0, 150_000, 299_999].map((i) => ({ key: `k${i}`, n: 1, pad: '' }))];
    const two = padJob(more);
    await two.job.start({ restore: 'latest' }).done;
    expect(two.out.values.map(({ key, n }) => [key, n])).toEqual([['k0', 1], ['k150000', 150_001], ['k299999', 300_000]]);
  }, 60_000);

  it('finds a damaged file past the budget at load, so that latest falls back', async () => {
    await padJob(big).job.start().done;
    const chk = join(dir, 'chk', 'big', 'chk-1');
    const names = (await readdir(chk)).filter((name) => name.startsWith('sum.')).sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
    const last = join(chk, names[names.length - 1]!);
    const bytes = await readFile(last);
    bytes[bytes.length - 10]! ^= 1;
    await writeFile(last, bytes);
    const warnings: string[] = [];
    const two = padJob([{ key: 'k0', n: 1, pad: '' }], warnings);
    await two.job.start({ restore: 'latest' }).done;
    expect(warnings[0]).toMatch(/checkpoint 1 of job 'big' cannot be restored .*checksum mismatch/);
    // Started fresh: k0 holds only the new record.
    expect(two.out.values.map(({ key, n }) => [key, n])).toEqual([['k0', 1]]);
  }, 60_000);
});

describe('checkpoints of one run, each written into the buffers of the one before', () => {
  /** A source of three phases, each read once the test opens it: every key at 1, then every key +1 000 000, then the end. */
  function phasedSource() {
    const gate = { phase: 0 };
    const phases: Count[][] = [
      Array.from({ length: KEYS }, (_, i) => ({ key: `k${i}`, n: 1 })),
      Array.from({ length: KEYS }, (_, i) => ({ key: `k${i}`, n: 1_000_000 })),
    ];
    const source = {
      name: 'phased',
      replayable: true,
      open() {
        let phase = 0;
        let at = 0;
        return {
          read(max: number) {
            if (phase > gate.phase) return [];
            if (phase >= phases.length) return null;
            const chunk = phases[phase]!.slice(at, at + max);
            at += chunk.length;
            if (at === phases[phase]!.length) [phase, at] = [phase + 1, 0];
            return chunk;
          },
          // The probe restored from its checkpoints (an array) reads from its start.
          offset: () => 0,
        };
      },
    };
    return { gate, source };
  }

  /** Two checkpoints of a run (every key at 1, then at 1 000 001) and each one's sums restored from `storage`. */
  async function twoCheckpointsRestored(storage: () => CheckpointStorage) {
    const { gate, source } = phasedSource();
    const job = createJob({ name: 'reuse', chunkSize: 4096, checkpoints: { storage: storage(), retain: 3 } });
    let seen = 0;
    job
      .source(source, { uid: 'in' })
      .pipe(keyBy((c: Count) => c.key), reduce((a: Count, b: Count) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }))
      .pipe(sinkTo({ name: 'count', open: () => ({ write: () => void seen++, finish: () => undefined, abort: () => undefined }) }, { uid: 'out' }));
    const running = job.start();
    const checkpointAfter = async (records: number) => {
      while (seen < records) await new Promise((resolve) => setTimeout(resolve, 10));
      return running.checkpoint();
    };
    const first = await checkpointAfter(KEYS);
    gate.phase = 1;
    const second = await checkpointAfter(2 * KEYS);
    gate.phase = 2;
    await running.done;
    expect(first.status).toBe('completed');
    expect(second.status).toBe('completed');

    // Restored, a key's sum goes on from the checkpoint's: 1 after the first, 1 000 001 after the second.
    const restoredSum = async (path: string) => {
      const out = collect<Count>();
      const again = createJob({ name: 'reuse', checkpoints: { storage: storage(), retain: 10 } });
      again
        .source(fromArray(['k0', 'k131072', `k${KEYS - 1}`].map((key) => ({ key, n: 0 }))), { uid: 'in' })
        .pipe(keyBy((c: Count) => c.key), reduce((a: Count, b: Count) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }))
        .pipe(out.sink({ uid: 'out' }));
      await again.start({ restore: path }).done;
      return out.values.map((c) => c.n);
    };
    return { first: await restoredSum(first.path!), second: await restoredSum(second.path!), secondId: second.id };
  }

  it('each restore their own state, the second with longer values than the first', async () => {
    const { first, second, secondId } = await twoCheckpointsRestored(() => fsCheckpointStorage(join(dir, 'chk')));
    expect(first).toEqual([1, 1, 1]);
    expect(second).toEqual([1_000_001, 1_000_001, 1_000_001]);
    const files = (await readdir(join(dir, 'chk', 'reuse', `chk-${secondId}`))).filter((name) => name.startsWith('sum.'));
    expect(files.length).toBeGreaterThan(1);
  }, 120_000);

  it('a storage of its own that keeps the bytes it was given, without saying it releases them, keeps each checkpoint intact', async () => {
    // The files' bytes are kept as given, not copied; the memory storage beside them only lists and removes.
    const held = new Map<string, Uint8Array>();
    const listing = memoryCheckpointStorage({ maxStateSize: Infinity });
    const keeping: CheckpointStorage = {
      location: 'keeping',
      async write(path, data) {
        held.set(path, data);
        await listing.write(path, new Uint8Array(0));
      },
      read: async (path) => held.get(path) ?? listing.read(path),
      list: (path) => listing.list(path),
      async remove(path) {
        for (const file of held.keys()) if (file === path || file.startsWith(`${path}/`)) held.delete(file);
        await listing.remove(path);
      },
    };
    const { first, second } = await twoCheckpointsRestored(() => keeping);
    expect(first).toEqual([1, 1, 1]);
    expect(second).toEqual([1_000_001, 1_000_001, 1_000_001]);
  }, 120_000);
});
