// Every duration of a checkpoint's stats is measured on the job's clock, so that on virtual time (the test harness)
// the parts add up: a task's asynchronous part runs within the checkpoint, and time that does not pass costs nothing.
import { describe, expect, it } from 'vitest';
import { keyBy, reduce } from 'weir';
import { harness } from 'weir/testing';

interface Rec {
  key: string;
  n: number;
}

describe('checkpoint durations on the virtual clock', () => {
  it('measure the time that passes on the clock between the barrier and the acknowledgement, and nothing else', async () => {
    const h = await harness<Rec>((input) =>
      input.pipe(
        keyBy((r) => r.key),
        reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
      ),
    );
    h.push({ key: 'a', n: 1 }, 1);
    h.push({ key: 'b', n: 2 }, 2);
    // The barrier passes every task at once; their state is written on later macrotasks, after the clock moved on.
    h.pushBarrier(1);
    h.setProcessingTime(50);
    await h.settle();
    const [snapshot] = h.completedSnapshots();
    expect(snapshot!.stats.durationMs).toBe(50);
    expect(snapshot!.stats.operators.map((op) => op.uid)).toContain('sum');
    for (const op of snapshot!.stats.operators) expect({ uid: op.uid, syncMs: op.syncMs, asyncMs: op.asyncMs }).toEqual({ uid: op.uid, syncMs: 0, asyncMs: 50 });
    h.close();
  });
});
