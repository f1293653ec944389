// The checkpoint control plane (Flink's CheckpointConfig): timeout, minPause, maxConcurrent, tolerableFailures,
// retain, retainOnCancel, the final checkpoint, and the stats of every checkpoint in checkpoints$ and in _metadata.
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  CheckpointAbortedError,
  CheckpointFailuresExceededError,
  collect,
  createJob,
  keyBy,
  memoryCheckpointStorage,
  reduce,
  type CheckpointOptions,
  type CheckpointStats,
  type CheckpointStorage,
  type JobOptions,
} from 'weir';
// Internal, to read the `_metadata` file the way the inspector does: the file format is what is checked here.
import { decodeFile } from '../../src/storage/fileFormat';
import { deferred } from '../support/deferred';
import { advanceTo } from '../support/virtualTime';
import { records, scripted, settle, unionSumJob, until, type Rec } from '../support/unionJob';

const never = () => new Promise<void>(() => undefined);
const INPUT = records(20, 4);

/** Memory storage whose state-file writes can be held back (`hold`) or made to fail (`fail`); `_metadata` is untouched. */
function controlledStorage() {
  const inner = memoryCheckpointStorage();
  const control = {
    started: [] as string[],
    gate: undefined as ReturnType<typeof deferred<void>> | undefined,
    failWith: undefined as Error | undefined,
    hold() {
      control.gate = deferred();
    },
    release() {
      control.gate?.resolve();
      control.gate = undefined;
    },
  };
  const storage: CheckpointStorage = {
    ...inner,
    async write(path, data) {
      if (!path.endsWith('_metadata')) {
        control.started.push(path);
        if (control.failWith) throw control.failWith;
        if (control.gate) await control.gate.promise;
      }
      return inner.write(path, data);
    },
  };
  return { storage, control };
}

/** `in → keyBy → reduce 'sum' → out`, whose source hands out INPUT and then waits forever: the job runs until cancelled. */
function endlessJob(checkpoints: CheckpointOptions, options: Partial<JobOptions> = {}) {
  const job = createJob({ name: 'control', chunkSize: 5, checkpoints, ...options });
  const out = collect<Rec>();
  job
    .source(scripted(INPUT, (read) => (read >= 4 ? never() : undefined)), { uid: 'in' })
    .pipe(keyBy((r: Rec) => r.key), reduce((a: Rec, b: Rec) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }), out.sink({ uid: 'out' }));
  const running = job.start();
  const reports: CheckpointStats[] = [];
  running.checkpoints$.subscribe((stats) => reports.push(stats));
  return { running, reports, out };
}

describe('checkpoints.timeout', () => {
  it('aborts a checkpoint not complete in time, reports it, and removes its partial files, even those written late', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { storage, control } = controlledStorage();
    const { running, reports } = endlessJob({ storage, timeout: 1_000, tolerableFailures: 1 }, { scheduler });
    control.hold();
    const first = running.checkpoint();
    first.catch(() => undefined);
    await until(() => control.started.length > 0);
    advanceTo(scheduler, 1_500);
    await expect(first).rejects.toThrow(CheckpointAbortedError);
    await expect(first).rejects.toThrow(/did not complete within 1000 ms/);
    expect(reports).toMatchObject([{ id: 1, status: 'aborted', reason: expect.stringMatching(/did not complete within 1000 ms/) }]);
    // The held writes finish after the abort: nothing of checkpoint 1 may stay.
    control.release();
    await settle();
    expect(await storage.list('control')).not.toContain('chk-1');
    // The job goes on, and the next checkpoint completes.
    const second = await running.checkpoint();
    expect(second).toMatchObject({ id: 2, status: 'completed' });
    // Beside it, the job's failure history records checkpoint 1 (see test/checkpoint/outcomes.test.ts).
    expect(await storage.list('control')).toEqual(['_failed_checkpoints', 'chk-2']);
    await running.cancel();
  });
});

describe('checkpoints.minPause and interval', () => {
  async function periodicTimestamps(minPause: number | undefined): Promise<number[]> {
    const scheduler = new VirtualTimeScheduler();
    const { running, reports } = endlessJob({ interval: 10, ...(minPause === undefined ? {} : { minPause }) }, { scheduler });
    await settle();
    for (let t = 10; t <= 200; t += 10) {
      advanceTo(scheduler, t);
      const before = reports.length;
      await settle();
      // Each checkpoint completes before the clock moves on.
      if (reports.length > before) expect(reports.at(-1)!.status).toBe('completed');
    }
    await running.cancel();
    return reports.filter((r) => r.status === 'completed').map((r) => r.timestamp);
  }

  it('triggers every interval, and waits minPause after a checkpoint ends before the next periodic one', async () => {
    expect(await periodicTimestamps(undefined)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200]);
    expect(await periodicTimestamps(45)).toEqual([10, 60, 110, 160]);
  });
});

describe('checkpoints.maxConcurrent', () => {
  async function inFlightAtOnce(maxConcurrent: number | undefined) {
    const { storage, control } = controlledStorage();
    const { running } = endlessJob({ storage, ...(maxConcurrent === undefined ? {} : { maxConcurrent }) });
    control.hold();
    const triggered = [running.checkpoint(), running.checkpoint(), running.checkpoint()];
    await until(() => control.started.length > 0);
    await settle();
    const dirs = new Set(control.started.map((path) => path.split('/')[1]));
    control.release();
    const stats = await Promise.all(triggered);
    await running.cancel();
    return { dirs: [...dirs].sort(), ids: stats.map((s) => s.id) };
  }

  it('keeps at most maxConcurrent checkpoints in flight (1 by default); the others wait their turn', async () => {
    expect(await inFlightAtOnce(undefined)).toEqual({ dirs: ['chk-1'], ids: [1, 2, 3] });
    expect(await inFlightAtOnce(2)).toEqual({ dirs: ['chk-1', 'chk-2'], ids: [1, 2, 3] });
  });
});

describe('checkpoints.tolerableFailures', () => {
  it('fails the job once more consecutive checkpoints failed than tolerated, with the last cause', async () => {
    const { storage, control } = controlledStorage();
    const { running, reports } = endlessJob({ storage, tolerableFailures: 2 });
    const full = new Error('disk full');
    control.failWith = full;
    await expect(running.checkpoint()).rejects.toBe(full);
    await expect(running.checkpoint()).rejects.toBe(full);
    // A success in between resets the count.
    control.failWith = undefined;
    await expect(running.checkpoint()).resolves.toMatchObject({ status: 'completed' });
    control.failWith = full;
    await expect(running.checkpoint()).rejects.toBe(full);
    await expect(running.checkpoint()).rejects.toBe(full);
    const last = new Error('disk still full');
    control.failWith = last;
    await expect(running.checkpoint()).rejects.toBe(last);
    const error = await running.done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointFailuresExceededError);
    expect((error as Error).message).toMatch(/3 checkpoints failed in a row, more than the 2 tolerated; last cause: disk still full/);
    expect((error as Error).cause).toBe(last);
    expect(reports.map((r) => r.status)).toEqual(['failed', 'failed', 'completed', 'failed', 'failed', 'failed']);
    expect(reports[0]!.reason).toBe('disk full');
  });

  it('with 0 tolerated (the default), the first failed checkpoint fails the job with its cause', async () => {
    const { storage, control } = controlledStorage();
    const { running } = endlessJob({ storage });
    const full = new Error('disk full');
    control.failWith = full;
    await expect(running.checkpoint()).rejects.toBe(full);
    await expect(running.done).rejects.toBe(full);
  });
});

describe('checkpoints.retain and retainOnCancel', () => {
  it('keeps the newest `retain` completed checkpoints', async () => {
    const storage = memoryCheckpointStorage();
    const { running } = endlessJob({ storage, retain: 2 });
    for (let i = 0; i < 4; i++) await running.checkpoint();
    expect(await storage.list('control')).toEqual(['chk-3', 'chk-4']);
    await running.cancel();
    expect(await storage.list('control')).toEqual(['chk-3', 'chk-4']);
  });

  it('retainOnCancel: false deletes the checkpoints when the job is cancelled', async () => {
    const storage = memoryCheckpointStorage();
    const { running } = endlessJob({ storage, retain: 2, retainOnCancel: false });
    await running.checkpoint();
    await running.checkpoint();
    expect(await storage.list('control')).toEqual(['chk-1', 'chk-2']);
    await running.cancel();
    expect(await storage.list('control')).toEqual([]);
  });
});

describe('final checkpoint and stats', () => {
  it('takes a final checkpoint when every bounded input finished; stats go to checkpoints$ and to _metadata', async () => {
    const storage = memoryCheckpointStorage();
    const { job, out } = unionSumJob(scripted(records(30, 3)), scripted(records(20, 3, 100)), { checkpoints: { storage } });
    const running = job.start();
    const reports: CheckpointStats[] = [];
    running.checkpoints$.subscribe((stats) => reports.push(stats));
    const result = await running.done;
    expect(out.values).toHaveLength(50);
    expect(result.checkpoints).toHaveLength(1);
    const [final] = result.checkpoints;
    expect(final).toMatchObject({ id: 1, status: 'completed', final: true });
    expect(reports).toEqual([final]);
    expect(final!.operators.map((op) => op.uid).sort()).toEqual(['a', 'b', 'out', 'sum', 'union']);
    for (const op of final!.operators) {
      expect(op).toEqual({
        uid: op.uid,
        subtask: 0,
        alignmentMs: expect.any(Number),
        syncMs: expect.any(Number),
        asyncMs: expect.any(Number),
        bytes: expect.any(Number),
        heldRecords: expect.any(Number),
      });
      // The union holds no state and, at the final checkpoint, no records in flight: it writes no file at all.
      if (op.uid === 'union') expect(op.bytes).toBe(0);
      else expect(op.bytes).toBeGreaterThan(0);
    }
    const metadataBytes = await storage.read('union-sum/chk-1/_metadata');
    const metadata = decodeFile('metadata', metadataBytes, '_metadata') as { stats: { bytes: number; fullSize: number; durationMs: number; operators: unknown[] } };
    const stateBytes = final!.operators.reduce((sum, op) => sum + op.bytes, 0);
    expect(metadata.stats).toEqual({ durationMs: expect.any(Number), bytes: stateBytes, fullSize: stateBytes, operators: final!.operators });
    // The reported size counts the metadata file too; with full (not incremental) checkpoints, fullSize = bytes.
    expect(final!.bytes).toBe(stateBytes + metadataBytes.length);
    expect(final!.fullSize).toBe(final!.bytes);
  });
});
