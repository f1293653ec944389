// A rolling reduce whose reducer changes its accumulator in place (as RxJS users write `scan`) while a checkpoint is
// still being written: the checkpoint keeps the value as of its barrier, not the change made after it.
import { describe, expect, it } from 'vitest';
import { keyBy, reduce, tumbling, window, type Flow } from 'weir';
import { harness } from 'weir/testing';

interface Ev {
  k: string;
  v: number;
}
const ev = (k: string, v: number): Ev => ({ k, v });

const inPlaceSums = (input: Flow<Ev>) =>
  input.pipe(
    keyBy((e: Ev) => e.k),
    reduce(
      (acc: Ev, e: Ev) => {
        acc.v += e.v;
        return acc;
      },
      { uid: 'sum' },
    ),
  );

describe('reduce with a reducer that changes its accumulator in place', () => {
  it('checkpoints the value as of the barrier while records after it change the accumulator', async () => {
    const h = await harness(inPlaceSums);
    h.push(ev('a', 1));
    h.push(ev('a', 2));
    const writing = h.snapshot();
    h.push(ev('a', 100)); // after the barrier, while the snapshot may still hold the accumulator
    const snapshot = await writing;
    expect(h.state('sum', 'reduce', 'a')).toEqual(ev('a', 103));
    const restored = await h.restore(snapshot);
    expect(restored.state('sum', 'reduce', 'a')).toEqual(ev('a', 3));
  });
});

describe('a window reduce with a reducer that changes its accumulator in place', () => {
  it('checkpoints the window contents as of the barrier', async () => {
    const windowed = (input: Flow<Ev>) =>
      input.pipe(
        keyBy((e: Ev) => e.k),
        window(tumbling(10)),
        reduce(
          (acc: Ev, e: Ev) => {
            acc.v += e.v;
            return acc;
          },
          { uid: 'sum' },
        ),
      );
    const h = await harness(windowed);
    h.push(ev('a', 1), 1);
    h.push(ev('a', 2), 2);
    const writing = h.snapshot();
    h.push(ev('a', 100), 3);
    const snapshot = await writing;
    const restored = await h.restore(snapshot);
    restored.pushWatermark(9);
    expect(restored.values()).toEqual([ev('a', 3)]);
  });
});
