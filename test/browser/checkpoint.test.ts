// The engine in the browser: a keyed job checkpointing to IndexedDB, restored into a new job, restarted after a
// failure, with exactly-once output; the same fixtures as the Node checkpoint tests.
import { createStore, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { CheckpointCorruptedError, StorageQuotaExceededError, collect, createJob, fromArray, keyBy, reduce, type Source } from 'weir';
import { indexedDbCheckpointStorage } from 'weir/browser';
import { expectedSums, pausableSource, readings, restartFromLatestCheckpoint, sumsJob, type Reading } from '../checkpoint/jobFixtures';
import { freshDbName, storageWithQuota } from './idbFixtures';

const storageOf = (dbName = freshDbName()) => indexedDbCheckpointStorage({ dbName });

describe('a keyed job with IndexedDB checkpoints', () => {
  it('continues from its latest checkpoint in a new job (a page reload) without counting anything twice', async () => {
    const dbName = freshDbName();
    const out = collect<Reading>();
    const paused = pausableSource(readings, [50]);
    const first = sumsJob({ checkpoints: { storage: storageOf(dbName) } }, paused.source, out).job.start();
    await paused.reached(50);
    const stats = await first.checkpoint();
    expect(stats.path).toBe(`indexeddb://${dbName}/sums/chk-1`);
    expect((await first.cancel()).status).toBe('cancelled');
    expect(out.values).toEqual(expectedSums.slice(0, 50));

    // A new storage object on the same database, as after a reload.
    paused.release(50);
    const result = await sumsJob({ checkpoints: { storage: storageOf(dbName) } }, paused.source, out).job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBe('sums/chk-1');
    expect(out.values).toEqual(expectedSums);
  });

  it('restores the checkpoint at the path its stats give', async () => {
    const storage = storageOf();
    const paused = pausableSource(readings, [30]);
    const running = sumsJob({ checkpoints: { storage, retain: 5 } }, paused.source).job.start();
    await paused.reached(30);
    const chk1 = await running.checkpoint();
    paused.release(30);
    await running.done;

    const { job, out } = sumsJob({ checkpoints: { storage } }, fromArray(readings));
    expect((await job.start({ restore: chk1.path }).done).restoredFrom).toBe(chk1.path);
    expect(out.values).toEqual(expectedSums.slice(30));
  });

  it('restarts after a failure from the latest checkpoint and collects every output exactly once', async () => {
    await restartFromLatestCheckpoint(storageOf(), 1_000);
  });

  it('keeps the newest `retain` checkpoints and deletes the older ones', async () => {
    const storage = storageOf();
    const paused = pausableSource(readings, [20, 40, 60]);
    const running = sumsJob({ checkpoints: { storage, retain: 2 } }, paused.source).job.start();
    for (const at of [20, 40, 60]) {
      await paused.reached(at);
      await running.checkpoint();
      paused.release(at);
    }
    await running.done;
    // Three checkpoints at the pauses, the final one at the end: the last two stay.
    expect(await storage.list('sums')).toEqual(['chk-3', 'chk-4']);
    expect(await storage.list('sums/chk-4')).toContain('_metadata');
  });

  it('refuses a checkpoint whose state file has a damaged byte (its XXH32 checksum) and restores the one before', async () => {
    const dbName = freshDbName();
    const storage = storageOf(dbName);
    const paused = pausableSource(readings, [30, 60]);
    const running = sumsJob({ checkpoints: { storage, retain: 2 } }, paused.source).job.start();
    for (const at of [30, 60]) {
      await paused.reached(at);
      await running.checkpoint();
      paused.release(at);
    }
    await running.cancel();
    // One byte of checkpoint 2's state file changed where IndexedDB keeps it: a digit of a sum, so the JSON still parses.
    const files = createStore(dbName, 'files');
    const name = (await storage.list('sums/chk-2')).find((file) => file.startsWith('sum.'))!;
    const bytes = await storage.read(`sums/chk-2/${name}`);
    const header = new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(10)));
    // Version 5: the sums are written as rows of their fields, checksummed with XXH32 as in every browser file.
    expect(header).toMatch(/^\{"weir":"state","version":5,"length":\d+,"xxh32":-?\d+\}$/);
    let digit = bytes.length - 1;
    while (!(bytes[digit]! >= 0x31 && bytes[digit]! <= 0x38)) digit--;
    bytes[digit] = bytes[digit]! + 1;
    await set(`sums/chk-2/${name}`, new Blob([bytes as Uint8Array<ArrayBuffer>]), files);

    const failed = sumsJob({ checkpoints: { storage } }, fromArray(readings)).job.start({ restore: 'sums/chk-2' }).done;
    await expect(failed).rejects.toThrow(CheckpointCorruptedError);
    await expect(failed).rejects.toThrow(new RegExp(`sums/chk-2/${name.replaceAll('.', '\\.')}.*checksum mismatch`));
    const { job, out } = sumsJob({ checkpoints: { storage } }, fromArray(readings));
    expect((await job.start({ restore: 'latest' }).done).restoredFrom).toBe('sums/chk-1');
    expect(out.values).toEqual(expectedSums.slice(30));
  });

  it('fails a checkpoint on a full quota with StorageQuotaExceededError; the previous checkpoint still restores', async () => {
    // From record 60 on, each key's state holds 100 kB: past the storage's 256 kB quota once all five keys have one.
    const records: Padded[] = Array.from({ length: 100 }, (_, n) => ({ key: `k${n % 5}`, n, pad: n >= 60 ? 'x'.repeat(100_000) : '' }));
    const storage = await storageWithQuota(256 * 1024);
    const paused = pausableSource(records, [40, 80]);
    const running = paddedJob(storage, paused.source).job.start();
    await paused.reached(40);
    await running.checkpoint();
    paused.release(40);
    await paused.reached(80);
    await expect(running.checkpoint()).rejects.toThrow(StorageQuotaExceededError);
    paused.release(80);
    await expect(running.done).rejects.toThrow(StorageQuotaExceededError);

    // Beside chk-1, the job's failure history (a small file, which still fits) records the failed checkpoint.
    expect(await storage.list('padded')).toEqual(['_failed_checkpoints', 'chk-1']);
    // Restored from checkpoint 1, the sums go on from record 40 as if nothing had failed.
    const { job, out } = paddedJob(storage, fromArray(records.slice(0, 60)));
    expect((await job.start({ restore: 'latest' }).done).restoredFrom).toBe('padded/chk-1');
    expect(out.values.map((r) => r.n)).toEqual(expectedSums.slice(40, 60).map((r) => r.n));
  });
});

interface Padded extends Reading {
  pad: string;
}

/** Sums `n` per key like `sumsJob`, keeping the latest record's `pad` in the state. */
function paddedJob(storage: ReturnType<typeof storageOf>, source: Source<Padded>) {
  const out = collect<Padded>();
  const job = createJob({ name: 'padded', chunkSize: 10, checkpoints: { storage } });
  job.source(source, { uid: 'in' }).pipe(
    keyBy((r) => r.key),
    reduce((a, b) => ({ key: a.key, n: a.n + b.n, pad: b.pad }), { uid: 'sum' }),
    out.sink({ uid: 'out' }),
  );
  return { job, out };
}
