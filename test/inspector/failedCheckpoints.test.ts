// Failed and aborted checkpoints at rest: they leave no chk-<id> directory, so the coordinator records them in the
// job's failure history file, which the inspector (and `weir inspect`) show; a damaged one is ignored, never in the
// way of a restore.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fromArray, type CheckpointStorage } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
// The inspector's reading code and the CLI's report are internal modules (the CLI and the inspector page use them).
import { inspectStorage, listJobs } from '../../src/inspector/readCheckpoint';
import { renderReport } from '../../src/node/cli/inspectCommand';
import { pausableSource, readings, sumsJob } from '../checkpoint/fixtures';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-failed-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A storage whose state-file writes of the checkpoints in `failing` throw a disk error. */
function failingFor(storage: CheckpointStorage, failing: RegExp): CheckpointStorage {
  return {
    ...storage,
    async write(path, data) {
      if (failing.test(path)) throw Object.assign(new Error(`ENOSPC: no space left on device, write '${path}'`), { code: 'ENOSPC' });
      return storage.write(path, data);
    },
  };
}

/** The sums job with checkpoint 1 (after 50 readings) failing on the disk, then the final checkpoint 2 completing. */
async function runWithFailedCheckpoint(storage: CheckpointStorage, warnings: string[] = []) {
  const paused = pausableSource(readings, [50]);
  const { job, out } = sumsJob({ checkpoints: { storage, tolerableFailures: 1, retain: 5 }, onWarning: (m) => warnings.push(m) }, paused.source);
  const running = job.start({ restore: 'latest' });
  await paused.reached(50);
  const first = running.checkpoint();
  first.catch(() => undefined);
  paused.release(50);
  const result = await running.done;
  return { result, first: await first.catch((e: unknown) => e), out: out.values };
}

describe('a failed checkpoint at rest', () => {
  it('is listed by the inspector with its status and reason, though its directory is gone', async () => {
    const storage = fsCheckpointStorage(dir);
    const { result, first } = await runWithFailedCheckpoint(failingFor(storage, /chk-1\/sum\./));
    expect((first as Error).message).toMatch(/ENOSPC/);
    expect(result.checkpoints.map((c) => c.id)).toEqual([2]);

    const [summary] = await inspectStorage(storage);
    expect(summary!.checkpoints.map((c) => c.id)).toEqual([2]);
    expect(summary!.failures).toEqual([
      { id: 1, kind: 'checkpoint', status: 'failed', reason: expect.stringMatching(/^ENOSPC: no space left on device/), error: 'Error', timestamp: expect.any(Number), durationMs: expect.any(Number), final: false },
    ]);
    const report = renderReport(dir, [summary!]);
    expect(report).toMatch(/job sums: 1 checkpoint, 0 savepoints, 1 recently failed or aborted/);
    expect(report).toMatch(/checkpoint 1 failed at .* after \d+ ms: Error: ENOSPC: no space left on device/);
  });

  it('of a job whose every checkpoint failed still lists the job', async () => {
    const storage = fsCheckpointStorage(dir);
    const { job } = sumsJob({ checkpoints: { storage: failingFor(storage, /chk-\d+\/(in|sum|out)\./) } }, fromArray(readings));
    await expect(job.start().done).rejects.toThrow(/ENOSPC/);
    expect(await listJobs(storage)).toEqual(['sums']);
    const [summary] = await inspectStorage(storage);
    expect(summary).toMatchObject({ job: 'sums', checkpoints: [], failures: [{ id: 1, status: 'failed', final: true }] });
  });

  it('keeps the history across runs; a damaged history is ignored by the inspector and restore, and started anew', async () => {
    const storage = fsCheckpointStorage(dir);
    await runWithFailedCheckpoint(failingFor(storage, /chk-1\/sum\./));
    const history = join(dir, 'sums', '_failed_checkpoints');
    const bytes = await readFile(history);
    expect(bytes.subarray(0, bytes.indexOf(10)).toString()).toMatch(/^\{"weir":"history","version":1,"length":\d+,"crc32":-?\d+\}$/);
    bytes[bytes.length - 2] = bytes[bytes.length - 2]! ^ 0xff;
    await writeFile(history, bytes);

    const [summary] = await inspectStorage(storage);
    expect(summary!.failures).toEqual([]);
    expect(summary!.failuresError).toMatch(new RegExp(`${history}: checksum mismatch`));
    expect(renderReport(dir, [summary!])).toMatch(/failure history ignored: .*checksum mismatch/);

    // The next run restores chk-2 as if the file were not there, and its own failure (checkpoint 3) starts a new history.
    const warnings: string[] = [];
    const { result, out } = await runWithFailedCheckpoint(failingFor(storage, /chk-3\/sum\./), warnings);
    expect(result.restoredFrom).toBe('sums/chk-2');
    expect(out).toEqual([]);
    expect(warnings).toEqual([expect.stringMatching(/job 'sums': its failure history is ignored and started anew: .*checksum mismatch/)]);
    const [after] = await inspectStorage(storage);
    expect(after!.failures.map((f) => f.id)).toEqual([3]);
    expect(after!.failuresError).toBeUndefined();
  });
});
