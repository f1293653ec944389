// Marble tests of weir fragments on an RxJS TestScheduler: records, watermarks and barriers as marble values,
// processing time as the scheduler's frames.
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { keyBy, process, reduce, tumbling, window, type Flow } from 'weir';
import { barrier, marbles, record, watermark } from 'weir/testing';

interface Ev {
  k: string;
  v: number;
}
const ev = (k: string, v: number): Ev => ({ k, v });
const sum = (a: Ev, b: Ev): Ev => ({ k: a.k, v: a.v + b.v });
const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

const windowSums = (input: Flow<Ev>) => input.pipe(keyBy((e: Ev) => e.k), window(tumbling(3000)), reduce(sum, { uid: 'sum' }));

describe('marbles', () => {
  it('a window fires at the watermark; the barrier completes checkpoint 1', async () => {
    await marbles(testScheduler(), windowSums, ({ cold, expectOutput, expectCompleted }) => {
      const input = cold('a-b-w-B|', { a: record(ev('k', 1), 1000), b: record(ev('k', 2), 2000), w: watermark(2999), B: barrier(1) });
      expectOutput(input).toBe('----x--|', { x: record(ev('k', 3), 2999) });
      expectCompleted([1]);
    });
  });

  it('shows watermarks and barriers leaving the fragment when asked', async () => {
    const h = await marbles(testScheduler(), windowSums, ({ cold, expectOutput }) => {
      const input = cold('a-w----B|', { a: record(ev('k', 1), 1000), w: watermark(5000), B: barrier(1) });
      expectOutput(input, { watermarks: true, barriers: true }).toBe('--(xw)-B|', { x: record(ev('k', 1), 2999), w: watermark(5000), B: barrier(1) });
    });
    expect(h.completedSnapshots().map((s) => s.id)).toEqual([1]);
  });

  it('processing-time timers fire on the test scheduler frames', async () => {
    const delayed = (input: Flow<Ev>) =>
      input.pipe(
        keyBy((e: Ev) => e.k),
        process<Ev, string>(
          {
            onElement: (_e, ctx) => ctx.timers.registerProcessingTimeTimer(ctx.timers.currentProcessingTime() + 5),
            onTimer: (time, ctx, out) => out.emit(`${String(ctx.key)}@${time}`),
          },
          { uid: 'delay' },
        ),
      );
    await marbles(testScheduler(), delayed, ({ cold, expectOutput }) => {
      expectOutput(cold('a-b 10ms |', { a: ev('x', 1), b: ev('y', 1) })).toBe('5ms x 1ms y 5ms |', { x: record('x@5', 5), y: record('y@7', 7) });
    });
  });

  it('a user function error shows as the marble error', async () => {
    const failing = (input: Flow<number>) =>
      input.pipe(
        process<number, number>({
          onElement(n, _ctx, out) {
            if (n < 0) throw new Error('negative');
            out.emit(n);
          },
        }),
      );
    await expect(
      marbles(testScheduler(), failing, ({ cold, expectOutput }) => {
        expectOutput(cold('a-b-c|', { a: 1, b: -1, c: 2 })).toBe('a-#', { a: record(1) }, new Error('negative'));
      }),
    ).rejects.toThrow('negative');
  });
});
