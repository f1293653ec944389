import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collect, createJob, fromArray, heapStateBackend, keyBy, reduce, type StateBackend } from 'weir';
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
