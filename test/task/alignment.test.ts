// Barrier alignment through jobs: two scripted sources into a union and a keyed sum. Flink's documented behaviour
// ("Checkpointing" in the stateful stream processing concepts, and "Checkpointing under backpressure"):
// - exactly-once: once barrier n arrived on an input, that input's records wait until barrier n arrived on every
//   input; the snapshot covers exactly the records before the barriers, so a restore counts each record once;
// - at-least-once: nothing waits; records after a barrier may already be in the snapshot and are replayed again;
// - unaligned (after the aligned checkpoint timeout): barriers overtake the waiting records; the records still before
//   the barrier on the slow input are stored with the checkpoint and replayed on restore: exactly-once again.
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { collect, createJob, keyBy, memoryCheckpointStorage, reduce, union, type CheckpointMode, type CheckpointStats, type RunningJob } from 'weir';
import { deferred } from '../support/deferred';
import { advanceTo } from '../support/virtualTime';
import { finalByKey, records, scripted, sumsOf, unionSumJob, until, type Rec } from '../support/unionJob';

const A = records(40, 5, 0);
const B = records(40, 5, 1000);
const CHUNK = 4;
const never = () => new Promise<void>(() => undefined);

/** Restores a new job from the latest checkpoint of `storage` and runs it to the end, collecting into `out`. */
async function restoreAndFinish(storage: ReturnType<typeof memoryCheckpointStorage>, out: ReturnType<typeof collect<Rec>>) {
  const { job } = unionSumJob(scripted(A), scripted(B), { chunkSize: CHUNK, checkpoints: { storage } }, out);
  return job.start({ restore: 'latest' }).done;
}

/**
 * Runs the union job with a checkpoint triggered while source `a` reads its 4th chunk (so `b`'s barrier comes first
 * and `b`'s 4th chunk waits at the union under exactly-once), cancels it once the checkpoint completed, and finishes
 * the work in a new job restored from it.
 */
async function checkpointCancelRestore(mode: CheckpointMode) {
  const storage = memoryCheckpointStorage();
  const out = collect<Rec>();
  let running!: RunningJob;
  let checkpoint: Promise<CheckpointStats> | undefined;
  const a = scripted(A, (read) => {
    if (read === 3) checkpoint = running.checkpoint();
    if (read === 6) return never(); // keeps the first job from finishing before it is cancelled
  });
  const { job } = unionSumJob(a, scripted(B), { chunkSize: CHUNK, checkpoints: { storage, mode } }, out);
  running = job.start();
  await until(() => checkpoint !== undefined);
  const stats = await checkpoint!;
  await running.cancel();
  await restoreAndFinish(storage, out);
  return { stats, out: out.values };
}

describe('barrier alignment through a job', () => {
  it('exactly-once: holds the records of the input whose barrier came first, so a restore counts every record once', async () => {
    const { stats, out } = await checkpointCancelRestore('exactly-once');
    const union = stats.operators.find((op) => op.uid === 'union')!;
    expect(union.heldRecords).toBe(CHUNK); // b's 4th chunk waited for a's barrier
    expect(union.alignmentMs).toBeGreaterThanOrEqual(0);
    expect(out).toHaveLength(A.length + B.length);
    expect(finalByKey(out, (r) => r.key)).toEqual(sumsOf(A, B));
  });

  it('at-least-once: holds nothing, and the records after the first barrier are counted again after a restore', async () => {
    const { stats, out } = await checkpointCancelRestore('at-least-once');
    expect(stats.operators.find((op) => op.uid === 'union')!.heldRecords).toBe(0);
    // b's 4th chunk reached the sum before the union's snapshot, and b's offset is before it: it is replayed.
    const replayed = B.slice(3 * CHUNK, 4 * CHUNK);
    expect(out).toHaveLength(A.length + B.length + replayed.length);
    expect(finalByKey(out, (r) => r.key)).toEqual(sumsOf(A, B, replayed));
  });

  it('unaligned after alignedTimeout: the barrier overtakes the held records of a slow input, whose in-flight records are saved and replayed: exactly-once after restore', async () => {
    const scheduler = new VirtualTimeScheduler();
    const storage = memoryCheckpointStorage();
    const out = collect<Rec>();
    let running!: RunningJob;
    let checkpoint: Promise<CheckpointStats> | undefined;
    const slow = deferred();
    // b is slow: the checkpoint starts while b reads its 4th chunk, which takes until a's 7th read.
    const b = scripted(B, (read) => {
      if (read !== 3) return;
      checkpoint = running.checkpoint();
      return slow.promise;
    });
    const a = scripted(A, (read) => {
      if (read === 6) {
        // a's 5th and 6th chunks wait at the union; the alignment now takes longer than alignedTimeout.
        advanceTo(scheduler, 100);
        slow.resolve();
      }
      if (read === 8) return never();
    });
    const { job } = unionSumJob(a, b, { chunkSize: CHUNK, scheduler, checkpoints: { storage, alignedTimeout: 50, timeout: 60_000 } }, out);
    running = job.start();
    await until(() => checkpoint !== undefined);
    const stats = await checkpoint!;
    expect(stats.status).toBe('completed');
    expect(stats.operators.find((op) => op.uid === 'union')!.heldRecords).toBe(2 * CHUNK);
    await running.cancel();
    await restoreAndFinish(storage, out);
    expect(out.values).toHaveLength(A.length + B.length);
    expect(finalByKey(out.values, (r) => r.key)).toEqual(sumsOf(A, B));
  });

  it('a 3-input union aligns once per checkpoint and restores exactly once', async () => {
    const C = records(40, 5, 5000);
    const storage = memoryCheckpointStorage();
    const out = collect<Rec>();
    const build = (hooks: boolean) => {
      let running!: RunningJob;
      const checkpoints: Promise<CheckpointStats>[] = [];
      const job = createJob({ name: 'union3', chunkSize: CHUNK, checkpoints: { storage } });
      const src = (items: Rec[], uid: string, hook?: (read: number) => void | Promise<void>) => job.source(scripted(items, hooks ? hook : undefined), { uid });
      union(
        src(A, 'a', (read) => {
          if (read === 2 || read === 5) checkpoints.push(running.checkpoint());
          if (read === 7) return never();
        }),
        src(B, 'b'),
        src(C, 'c'),
      ).pipe(keyBy((r: Rec) => r.key), reduce((x: Rec, y: Rec) => ({ key: x.key, n: x.n + y.n }), { uid: 'sum' }), out.sink({ uid: 'out' }));
      running = job.start(hooks ? {} : { restore: 'latest' });
      return { running, checkpoints };
    };
    const first = build(true);
    await until(() => first.checkpoints.length === 2);
    const stats = await Promise.all(first.checkpoints);
    expect(stats.map((s) => s.status)).toEqual(['completed', 'completed']);
    // b's and c's barriers come before a's: their chunk after the barrier waits.
    expect(stats.map((s) => s.operators.find((op) => op.uid.startsWith('union'))!.heldRecords)).toEqual([2 * CHUNK, 2 * CHUNK]);
    await first.running.cancel();
    await build(false).running.done;
    expect(out.values).toHaveLength(A.length + B.length + C.length);
    expect(finalByKey(out.values, (r) => r.key)).toEqual(sumsOf(A, B, C));
  });
});
