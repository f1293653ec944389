import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collect, createJob, fromArray, keyBy, reduce } from 'weir';
import { fsCheckpointStorage } from 'weir/node';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-nesting-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Text {
  key: string;
  text: string;
  n: number;
}

function textJob(records: Text[]) {
  const job = createJob({ name: 'texts', checkpoints: { storage: fsCheckpointStorage(dir) } });
  const out = collect<Text>();
  job
    .source(fromArray(records), { uid: 'in' })
    .pipe(keyBy((t: Text) => t.key), reduce((a: Text, b: Text) => ({ ...a, n: a.n + b.n }), { uid: 'texts' }))
    .pipe(out.sink({ uid: 'out' }));
  return { job, out };
}

describe("a state file's nesting check (the guard against payloads nested past what readers can recurse)", () => {
  it('counts only brackets outside strings, past escaped quotes and backslashes, in keys and values', async () => {
    const texts = ['['.repeat(600), '{'.repeat(600), '\\', '\\\\', '"[[', 'a\\"[{', `"${'['.repeat(700)}"`, '\\"\\'];
    const records = texts.map((text, i) => ({ key: `${text}#${i}`, text, n: 1 }));
    await textJob(records).job.start().done;
    // The source resumes past the records it read before: the second copy of each goes on from the restored count.
    const again = textJob([...records, ...records]);
    await again.job.start({ restore: 'latest' }).done;
    expect(again.out.values.map(({ key, text, n }) => [key, text, n])).toEqual(records.map(({ key, text }) => [key, text, 2]));
  });
});
