// Restoring: which paths name a checkpoint, what `latest` says when it cannot restore any, and `_metadata` files
// that name files no file system can read.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointCorruptedError, CheckpointNotFoundError, JobDefinitionError, createJob, fromArray, type CheckpointStorage } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
// Internal, to write a `_metadata` that passes its checksum but lists a bad file: what a broken tool could leave.
import { decodeFile, encodeFile } from '../../src/storage/fileFormat';
import { expectedSums, pausableSource, readings, sumsJob } from '../checkpoint/fixtures';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-restore-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the sums job to its end with a checkpoint after reading 50 (chk-1) and the final one (chk-2). */
async function twoCheckpoints(storage: CheckpointStorage): Promise<void> {
  const paused = pausableSource(readings, [50]);
  const { job } = sumsJob({ checkpoints: { storage, retain: 5 } }, paused.source);
  const running = job.start();
  await paused.reached(50);
  await running.checkpoint();
  paused.release(50);
  await running.done;
}

/** Rewrites a checkpoint's `_metadata` (checksum and all) with the first file of operator 'sum' renamed to `file`. */
async function renameSumFile(chk: string, file: string): Promise<void> {
  const path = join(chk, '_metadata');
  const metadata = decodeFile('metadata', new Uint8Array(await readFile(path)), path) as { operators: { uid: string; files: { file: string }[] }[] };
  metadata.operators.find((operator) => operator.uid === 'sum')!.files[0]!.file = file;
  await writeFile(path, encodeFile('metadata', metadata));
}

describe("restore: 'latest'", () => {
  it('says that the job starts fresh, and which checkpoints it rejected, when none can be restored', async () => {
    const storage = fsCheckpointStorage(dir);
    await twoCheckpoints(storage);
    for (const chk of ['chk-1', 'chk-2']) await writeFile(join(dir, 'sums', chk, 'in.0'), 'damaged');
    const warnings: string[] = [];
    const { job, out } = sumsJob({ checkpoints: { storage }, onWarning: (message) => warnings.push(message) }, fromArray(readings));
    const result = await job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBeUndefined();
    expect(out.values).toEqual(expectedSums);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/checkpoint 2 of job 'sums' cannot be restored .*chk-2.*in\.0.*; falling back to checkpoint 1$/);
    expect(warnings[1]).toMatch(/checkpoint 1 of job 'sums' cannot be restored .*chk-1.*in\.0/);
    expect(warnings[1]).toMatch(/no older checkpoint is left: none of the job's complete checkpoints \(chk-2, chk-1\) can be restored, so the job starts fresh/);
    expect(warnings.join('\n')).not.toMatch(/falling back to an older checkpoint/);
  });
});

describe('restore: path', () => {
  it('is relative to the storage root or absolute; one written relative to the working directory is rejected with what was looked for', async () => {
    const root = join(dir, 'ck');
    const storage = fsCheckpointStorage(root);
    await twoCheckpoints(storage);
    // Both rules restore the same checkpoint.
    for (const path of ['sums/chk-1', join(root, 'sums', 'chk-1')]) {
      const { job } = sumsJob({ checkpoints: { storage, retain: 5 } }, fromArray(readings));
      await expect(job.start({ restore: path }).done).resolves.toMatchObject({ restoredFrom: path });
    }
    const { job } = sumsJob({ checkpoints: { storage } }, fromArray(readings));
    const error = (await job.start({ restore: 'ck/sums/chk-1' }).done.catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(CheckpointNotFoundError);
    expect(error.message).toContain(`no checkpoint at ${join(root, 'ck', 'sums', 'chk-1', '_metadata')}`);
    expect(error.message).toContain(`relative to the checkpoint storage's root (${root}) or absolute, not relative to the working directory`);
    expect(error.message).toContain("did you mean 'sums/chk-1'?");
  });
});

describe('a _metadata that names a file no file system can read', () => {
  const cases: [string, (chk: string) => Promise<string>][] = [
    ['a 300-character name', async () => 'a'.repeat(300)],
    [
      'a directory',
      async (chk) => {
        await mkdir(join(chk, 'sub'));
        return 'sub';
      },
    ],
  ];

  it.each(cases)('%s: an explicit restore rejects with CheckpointCorruptedError naming the file', async (_what, make) => {
    const storage = fsCheckpointStorage(dir);
    await twoCheckpoints(storage);
    const chk = join(dir, 'sums', 'chk-2');
    const name = await make(chk);
    await renameSumFile(chk, name);
    const { job } = sumsJob({ checkpoints: { storage } }, fromArray(readings));
    const error = (await job.start({ restore: chk }).done.catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(CheckpointCorruptedError);
    expect(error.message).toContain(name.length > 40 ? join(chk, '_metadata') : join(chk, name));
    expect(error.message).toContain(name.slice(0, 40));
  });

  it.each(cases)("%s: restore 'latest' falls back to the previous checkpoint", async (_what, make) => {
    const storage = fsCheckpointStorage(dir);
    await twoCheckpoints(storage);
    const chk = join(dir, 'sums', 'chk-2');
    await renameSumFile(chk, await make(chk));
    const warnings: string[] = [];
    const { job, out } = sumsJob({ checkpoints: { storage }, onWarning: (message) => warnings.push(message) }, fromArray(readings));
    const result = await job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBe('sums/chk-1');
    expect(out.values).toEqual(expectedSums.slice(50));
    expect(warnings).toEqual([expect.stringMatching(/checkpoint 2 of job 'sums' cannot be restored .*; falling back to checkpoint 1$/)]);
  });
});

describe('a uid too long for state file names', () => {
  it('is rejected when the job is defined, before any checkpoint could fail to be written with ENAMETOOLONG', () => {
    const job = createJob({ name: 'long-uid' });
    expect(() => job.source(fromArray([1]), { uid: 'u'.repeat(201) })).toThrow(JobDefinitionError);
    expect(() => job.source(fromArray([1]), { uid: 'é'.repeat(40) })).toThrow(/240 characters once URI-encoded for its state file names, at most 200/);
    expect(() => job.source(fromArray([1]), { uid: 'u'.repeat(200) })).not.toThrow();
  });
});
