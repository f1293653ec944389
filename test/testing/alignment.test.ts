// Barrier alignment at a two-input operator, driven barrier by barrier through the harness (Flink's
// SingleCheckpointBarrierHandler semantics): which records wait, when the snapshot is taken, what it covers.
import { describe, expect, it } from 'vitest';
import { keyBy, reduce, unionWith, type Flow } from 'weir';
import { harness } from 'weir/testing';

interface Rec {
  key: string;
  n: number;
}
const rec = (key: string, n: number): Rec => ({ key, n });

/** union(a, b) → keyBy(key) → running sum; uids 'union' and 'sum'. */
const unionSum = (a: Flow<Rec>, b: Flow<Rec>) =>
  unionWith({ uid: 'union' }, a, b).pipe(
    keyBy((r: Rec) => r.key),
    reduce((x: Rec, y: Rec) => rec(x.key, x.n + y.n), { uid: 'sum' }),
  );

describe('barrier alignment through the harness', () => {
  it('exactly-once: holds the records of the input whose barrier came first until the barrier reached every input', async () => {
    const h = await harness(unionSum);
    expect(h.inputCount).toBe(2);
    h.push(rec('k', 1), undefined, 0);
    h.pushBarrier(1, 1);
    h.push(rec('k', 10), undefined, 1); // after b's barrier: waits
    h.push(rec('k', 2), undefined, 0); // a has no barrier yet: goes through
    expect(h.held()).toEqual([{ input: 1, value: rec('k', 10), timestamp: undefined }]);
    expect(h.values()).toEqual([rec('k', 1), rec('k', 3)]);

    h.pushBarrier(1, 0); // aligned: snapshot (sum = 3), then the held record goes on
    expect(h.held()).toEqual([]);
    expect(h.values().at(-1)).toEqual(rec('k', 13));

    await h.settle();
    const [checkpoint] = h.completedSnapshots();
    expect(checkpoint!.id).toBe(1);
    expect(checkpoint!.stats.operators.find((op) => op.uid === 'union')!.heldRecords).toBe(1);
    // The snapshot covers exactly the records before the barriers: the held record is not in it.
    const restored = await h.restore(checkpoint!);
    expect(restored.state('sum', 'reduce', 'k')).toEqual(rec('k', 3));
  });

  it('at-least-once: holds nothing, so a record after the first barrier is already in the snapshot', async () => {
    const h = await harness(unionSum, { mode: 'at-least-once' });
    h.push(rec('k', 1), undefined, 0);
    h.pushBarrier(1, 1);
    h.push(rec('k', 10), undefined, 1);
    expect(h.held()).toEqual([]);
    h.pushBarrier(1, 0);
    await h.settle();
    const restored = await h.restore(h.completedSnapshots()[0]!);
    expect(restored.state('sum', 'reduce', 'k')).toEqual(rec('k', 11));
  });

  it('a cancellation marker ends the alignment: held records go on and the checkpoint never completes', async () => {
    const h = await harness(unionSum);
    h.pushBarrier(1, 0);
    h.push(rec('k', 1), undefined, 0);
    expect(h.held()).toHaveLength(1);
    h.pushCancel(1, 1);
    expect(h.held()).toEqual([]);
    expect(h.values()).toEqual([rec('k', 1)]);
    await h.settle();
    expect(h.completedSnapshots()).toEqual([]);
  });

  it('a newer barrier subsumes an alignment in progress; the newer checkpoint completes', async () => {
    const h = await harness(unionSum);
    h.pushBarrier(1, 0);
    h.push(rec('k', 1), undefined, 0);
    h.pushBarrier(2, 1); // checkpoint 1 is subsumed at the union: a's record goes on, then a waits for barrier 2
    expect(h.held()).toEqual([]);
    h.push(rec('k', 5), undefined, 1);
    expect(h.held()).toEqual([{ input: 1, value: rec('k', 5), timestamp: undefined }]);
    h.pushBarrier(2, 0);
    await h.settle();
    expect(h.completedSnapshots().map((s) => s.id)).toEqual([2]);
  });

  it('an ended input counts as aligned', async () => {
    const h = await harness(unionSum);
    h.endInput(1);
    h.pushBarrier(1, 0);
    await h.settle();
    expect(h.completedSnapshots().map((s) => s.id)).toEqual([1]);
  });

  it('checkpoint ids only grow', async () => {
    const h = await harness(unionSum);
    h.pushBarrier(3);
    expect(() => h.pushBarrier(2)).toThrow(/checkpoint ids only grow, and 2 cannot be used here; use 4 or more/);
    expect(() => h.pushBarrier(3, 0)).toThrow(/already pushed into input 0/);
    await h.settle();
    expect(h.completedSnapshots().map((s) => s.id)).toEqual([3]);
  });
});
