import { describe, expect, it } from 'vitest';
import { createJob, forEach, fromArray, keyBy, memoryCheckpointStorage, process, valueState, type Source } from 'weir';
import { CHUNK, pausableSource, readings, type Reading } from './fixtures';

const total = valueState<number>('total', { default: 0, queryable: 'total' });
const sumOf = (key: string, before: number) => readings.slice(0, before).filter((r) => r.key === key).reduce((sum, r) => sum + r.n, 0);

/** A job whose only branch ends in a keyed operator: its state is read through queries, there is no sink. */
function sinklessJob(source: Source<Reading>, storage = memoryCheckpointStorage()) {
  const job = createJob({ name: 'sinkless', chunkSize: CHUNK, checkpoints: { storage } });
  job.source(source, { uid: 'readings' }).pipe(
    keyBy((r) => r.key),
    process<Reading, never>({ onElement: (r, ctx) => ctx.state(total).update(ctx.state(total).value()! + r.n) }, { uid: 'totals', states: [total] }),
  );
  return { job, storage };
}

describe('a branch that ends in an operator, without a sink', () => {
  it('acknowledges checkpoints, restores its state, and stops', async () => {
    const first = pausableSource(readings, [50]);
    const { job, storage } = sinklessJob(first.source);
    const running = job.start();
    await first.reached(50);
    expect((await running.checkpoint()).id).toBe(1);
    expect(await running.query('total', 'k1')).toBe(sumOf('k1', 50));
    const stopped = await running.stop();
    expect(stopped.checkpoints.at(-1)?.final).toBe(true);

    // The restored job resumes where the stop left it: the source's offset and the keyed totals together.
    const second = pausableSource(readings, [90]);
    const restored = sinklessJob(second.source, storage).job.start({ restore: 'latest' });
    await second.reached(90);
    expect(await restored.query('total', 'k1')).toBe(sumOf('k1', 90));
    second.release(90);
    const result = await restored.done;
    expect(result.checkpoints.at(-1)?.final).toBe(true);
  });
});

describe('a source that nothing reads', () => {
  it('does not keep the job from checkpointing and finishing', async () => {
    const job = createJob({ name: 'unread', chunkSize: CHUNK, checkpoints: { storage: memoryCheckpointStorage() } });
    const out: number[] = [];
    job.source(fromArray([1, 2, 3]), { uid: 'read' }).pipe(forEach((n) => void out.push(n)));
    job.source(fromArray([4, 5]), { uid: 'unread' });
    const result = await job.start().done;
    expect(out).toEqual([1, 2, 3]);
    expect(result.checkpoints.at(-1)?.final).toBe(true);
  });
});
