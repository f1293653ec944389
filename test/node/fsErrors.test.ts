import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StorageAccessError, StorageQuotaExceededError, collect, createJob, fromArray } from 'weir';
import { fsCheckpointStorage, toFile } from 'weir/node';
import { pausableSource, readings, sumsJob } from '../checkpoint/jobFixtures';
import { breakFs, healFs } from '../support/fsFaults';

// File system errors at the fs boundary (a full disk, a read-only file system, a missing permission), injected into
// node:fs/promises with the errno, syscall and path Linux gives them: the checkpoint storage and the file sink report
// them as typed errors naming the file, the real cause and the way out, and a failed run leaves no lock behind.
vi.mock('node:fs/promises', async (importOriginal) => (await import('../support/fsFaults')).faultyFs(await importOriginal()));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-fs-errors-'));
});
afterEach(async () => {
  healFs();
  await rm(dir, { recursive: true, force: true });
});

const bytes = new TextEncoder().encode('{"a":1}');

/** The rejection of `promise`, which must reject. */
async function rejection(promise: Promise<unknown>): Promise<Error & { cause?: NodeJS.ErrnoException }> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure as Error & { cause?: NodeJS.ErrnoException },
  );
  expect(error).toBeDefined();
  return error!;
}

describe('fs checkpoint storage errors', () => {
  it('a full disk is a StorageQuotaExceededError naming the file, with the ENOSPC as cause', async () => {
    const storage = fsCheckpointStorage(dir);
    await storage.write('job/chk-1/_metadata', bytes);
    breakFs(dir, 'full');
    const error = await rejection(storage.write('job/chk-2/_metadata', bytes));
    expect(error).toBeInstanceOf(StorageQuotaExceededError);
    expect(error.message).toContain(`checkpoint storage ${dir}: cannot write ${join(dir, 'job', 'chk-2')}/`);
    expect(error.message).toMatch(/the disk is full \(ENOSPC\); free space on that file system, or move the checkpoint directory/);
    expect(error.cause?.code).toBe('ENOSPC');
    healFs();
    expect(new TextDecoder().decode(await storage.read('job/chk-1/_metadata'))).toBe('{"a":1}');
  });

  it('a read-only file system reported as ENOENT by mkdir is a StorageAccessError that says read-only', async () => {
    breakFs(dir, 'read-only');
    const error = await rejection(fsCheckpointStorage(dir).write('job/chk-1/_metadata', bytes));
    expect(error).toBeInstanceOf(StorageAccessError);
    expect(error.message).toContain(`cannot write ${join(dir, 'job', 'chk-1')}: ${dir} is on a read-only file system (EROFS)`);
    expect(error.message).toMatch(/remount it read-write, or use a directory on a writable one/);
    expect(error.cause).toMatchObject({ code: 'ENOENT', syscall: 'mkdir' });
  });

  it('a missing permission is a StorageAccessError that says permission denied', async () => {
    breakFs(dir, 'denied');
    const error = await rejection(fsCheckpointStorage(dir).write('_metadata', bytes));
    expect(error).toBeInstanceOf(StorageAccessError);
    expect(error.message).toMatch(/cannot write .*_metadata.*: permission denied on .* \(EACCES\); give this process \(uid \d+\) write access to it/);
    expect(error.cause?.code).toBe('EACCES');
  });

  it('a job whose checkpoint directory is read-only fails to start with StorageAccessError naming its lock', async () => {
    const checkpoints = join(dir, 'checkpoints');
    breakFs(dir, 'read-only');
    const { job } = sumsJob({ checkpoints: { storage: fsCheckpointStorage(checkpoints) } }, fromArray(readings));
    const error = await rejection(job.start().done);
    expect(error).toBeInstanceOf(StorageAccessError);
    expect(error.message).toContain(`cannot write the lock ${join(checkpoints, 'sums')}: ${dir} is on a read-only file system`);
  });

  it('a run that ends while its directory is read-only leaves no lock the next start trips on', async () => {
    const storage = fsCheckpointStorage(dir);
    const gate = pausableSource(readings, [20]);
    const running = sumsJob({ checkpoints: { storage } }, gate.source).job.start();
    await gate.reached(20);
    // The release cannot unlink the lock: the file system turned read-only under the run.
    breakFs(dir, 'read-only');
    await running.cancel();
    expect(JSON.parse(await readFile(join(dir, 'sums', '.lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    healFs();
    const out = collect<(typeof readings)[number]>();
    await sumsJob({ checkpoints: { storage } }, fromArray(readings), out).job.start().done;
    expect(out.values).toHaveLength(readings.length);
  });
});

describe('toFile errors', () => {
  const sumsTo = (path: string) => {
    const job = createJob({ name: 'out', checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } });
    job.source(fromArray([1, 2, 3]), { uid: 'in' }).pipe(toFile(path, { uid: 'out' }));
    return job;
  };

  it('an output directory on a read-only file system is a StorageAccessError naming the output', async () => {
    const output = join(dir, 'ro', 'deep', 'out.jsonl');
    // The mount point exists; what the sink would create under it cannot.
    await mkdir(join(dir, 'ro'));
    breakFs(join(dir, 'ro'), 'read-only');
    const error = await rejection(sumsTo(output).start().done);
    expect(error).toBeInstanceOf(StorageAccessError);
    expect(error.message).toContain(`toFile(${output}): cannot write ${join(dir, 'ro', 'deep')}: ${join(dir, 'ro')} is on a read-only file system (EROFS)`);
  });

  it('a full disk while committing output is a StorageQuotaExceededError naming the output', async () => {
    const output = join(dir, 'full', 'out.jsonl');
    await sumsTo(output).start().done;
    breakFs(join(dir, 'full'), 'full');
    const error = await rejection(sumsTo(output).start().done);
    expect(error).toBeInstanceOf(StorageQuotaExceededError);
    expect(error.message).toMatch(/^toFile\(.*out\.jsonl\): cannot write .*: the disk is full \(ENOSPC\); free space on that file system, or move the output/);
    expect(error.cause?.code).toBe('ENOSPC');
  });
});
