// The harness drives real operators step by step; these are weir's window, timer and state scenarios as Flink's
// operator tests read: push, advance the watermark or the clock, look at the output.
import { describe, expect, it } from 'vitest';
import { CheckpointCorruptedError, eventTimeTrigger, keyBy, listState, process, purging, reduce, StateMigrationError, tumbling, valueState, window, type Flow } from 'weir';
import { harness, HarnessInputError, record, SnapshotMismatchError, watermark, type HarnessSnapshot } from 'weir/testing';

interface Ev {
  k: string;
  v: number;
}
const ev = (k: string, v: number): Ev => ({ k, v });
const sum = (a: Ev, b: Ev): Ev => ({ k: a.k, v: a.v + b.v });

/** Per-key sums over tumbling windows of 10 ms with 5 ms of allowed lateness. */
const lateSums = (input: Flow<Ev>) =>
  input.pipe(keyBy((e: Ev) => e.k), window(tumbling(10), { allowedLateness: 5 }), reduce(sum, { uid: 'sum' }));

describe('windows through the harness', () => {
  it('fires a tumbling window when the watermark reaches its end, stamped with its last instant', async () => {
    const h = await harness((input: Flow<Ev>) => input.pipe(keyBy((e: Ev) => e.k), window(tumbling(3000)), reduce(sum, { uid: 'sum' })));
    h.push(ev('a', 1), 1000);
    h.push(ev('b', 5), 1500);
    h.push(ev('a', 2), 2000);
    h.pushWatermark(2998);
    expect(h.output()).toEqual([]);
    h.pushWatermark(2999);
    expect(h.output()).toEqual([record(ev('a', 3), 2999), record(ev('b', 5), 2999)]);
    expect(h.output({ watermarks: true }).at(-1)).toEqual(watermark(2999));
  });

  it('re-fires for late records within lateness, then routes later ones to lateData()', async () => {
    const h = await harness(lateSums);
    h.push(ev('a', 1), 1);
    h.pushWatermark(11); // [0,10) fires with 1
    h.push(ev('a', 4), 3); // late, within lateness: fires again with everything so far
    h.pushWatermark(13);
    h.push(ev('a', 16), 4); // 9 + 5 > 13: still fires
    h.pushWatermark(14); // 9 + 5 = 14: [0,10) is cleaned up
    h.push(ev('a', 64), 5);
    expect(h.output()).toEqual([record(ev('a', 1), 9), record(ev('a', 5), 9), record(ev('a', 21), 9)]);
    expect(h.lateData()).toEqual([record(ev('a', 64), 5)]);
  });

  it('with purging(eventTimeTrigger()) a late firing emits only what came since the last one', async () => {
    const h = await harness((input: Flow<Ev>) =>
      input.pipe(keyBy((e: Ev) => e.k), window(tumbling(10), { allowedLateness: 5, trigger: purging(eventTimeTrigger()) }), reduce(sum, { uid: 'sum' })),
    );
    h.push(ev('a', 1), 1);
    h.pushWatermark(11);
    h.push(ev('a', 4), 3);
    expect(h.values().map((e) => e.v)).toEqual([1, 4]);
  });

  it('keeps window contents in keyed state scoped to the window, readable by uid, state and key', async () => {
    const h = await harness(lateSums);
    h.push(ev('a', 1), 1);
    h.push(ev('a', 2), 2);
    expect(h.state('sum', 'window-contents', 'a', '0:10')).toEqual(ev('a', 3));
    expect(h.state('sum', 'window-contents', 'b', '0:10')).toBeUndefined();
    h.pushWatermark(14); // fired and cleaned up
    expect(h.state('sum', 'window-contents', 'a', '0:10')).toBeUndefined();
  });
});

describe('processing time', () => {
  it('fires processing-time timers when the test sets the clock', async () => {
    const h = await harness((input: Flow<Ev>) =>
      input.pipe(
        keyBy((e: Ev) => e.k),
        process<Ev, string>(
          {
            onElement(e, ctx) {
              ctx.timers.registerProcessingTimeTimer(ctx.timers.currentProcessingTime() + 100);
            },
            onTimer(time, ctx, out) {
              out.emit(`${String(ctx.key)}@${time}`);
            },
          },
          { uid: 'timers' },
        ),
      ),
    );
    h.setProcessingTime(50);
    h.push(ev('a', 1));
    h.setProcessingTime(149);
    expect(h.values()).toEqual([]);
    h.setProcessingTime(150);
    expect(h.values()).toEqual(['a@150']);
    expect(() => h.setProcessingTime(10)).toThrow(HarnessInputError);
  });
});

describe('snapshots', () => {
  const counter = valueState<number>('count', { default: 0 });
  const counting = (input: Flow<Ev>) =>
    input.pipe(
      keyBy((e: Ev) => e.k),
      process<Ev, [string, number]>(
        {
          onElement(e, ctx, out) {
            const count = ctx.state(counter);
            count.update(count.value()! + 1);
            out.emit([e.k, count.value()!]);
          },
        },
        { uid: 'count' },
      ),
    );

  it('round-trips state and pending windows through the checkpoint bytes into a new harness', async () => {
    const h = await harness(lateSums);
    h.push(ev('a', 1), 1);
    h.push(ev('a', 2), 2);
    const snapshot = await h.snapshot();
    expect(snapshot.files.has('_metadata')).toBe(true);
    h.push(ev('a', 100), 3); // after the snapshot: not in it
    const restored = await h.restore(snapshot);
    restored.pushWatermark(9);
    expect(restored.output()).toEqual([record(ev('a', 3), 9)]);
  });

  it('reads keyed state after a restore by descriptor', async () => {
    const h = await harness(counting);
    h.push(ev('a', 0));
    h.push(ev('a', 0));
    const restored = await h.restore(await h.snapshot());
    expect(restored.state('count', counter, 'a')).toBe(2);
    restored.push(ev('a', 0));
    expect(restored.values()).toEqual([['a', 3]]);
  });

  it('rejects a snapshot whose files were damaged', async () => {
    const h = await harness(counting);
    h.push(ev('a', 0));
    const snapshot = await h.snapshot();
    const files = new Map(snapshot.files);
    const [name, bytes] = [...files].find(([file]) => file.startsWith('count'))!;
    const damaged = new Uint8Array(bytes);
    damaged[damaged.length - 2]! ^= 0xff;
    files.set(name, damaged);
    await expect(h.restore({ ...snapshot, files } satisfies HarnessSnapshot)).rejects.toThrow(CheckpointCorruptedError);
  });

  it('restoring into a fragment whose operators differ says which uids do not match', async () => {
    const h = await harness(counting);
    h.push(ev('a', 0));
    const snapshot = await h.snapshot();
    const renamed = (input: Flow<Ev>) => input.pipe(keyBy((e: Ev) => e.k), reduce(sum, { uid: 'renamed' }));
    await expect(harness(renamed, { restore: snapshot })).rejects.toThrow(SnapshotMismatchError);
    await expect(harness(renamed, { restore: snapshot })).rejects.toThrow(/'count'.*the fragment has instead: 'renamed'/);
    const dropped = await harness(renamed, { restore: snapshot, allowNonRestoredState: true });
    dropped.push(ev('a', 1));
    expect(dropped.values()).toEqual([ev('a', 1)]);
    await expect(harness(counting, { restore: snapshot, maxParallelism: 64 })).rejects.toThrow(/maxParallelism 128/);
  });

  it('restoring into a fragment that reads a state as another kind fails with StateMigrationError naming both', async () => {
    const h = await harness(counting);
    h.push(ev('a', 0));
    const snapshot = await h.snapshot();
    const asList = listState<number>('count');
    const listing = (input: Flow<Ev>) =>
      input.pipe(keyBy((e: Ev) => e.k), process<Ev, number[]>({ onElement: (_e, ctx, out) => out.emit(ctx.state(asList).get()) }, { uid: 'count' }));
    const opening = harness(listing, { restore: snapshot }).then((restored) => restored.push(ev('a', 0)));
    await expect(opening).rejects.toThrow(StateMigrationError);
    await expect(harness(listing, { restore: snapshot }).then((restored) => restored.push(ev('a', 0)))).rejects.toThrow(/saved as value state.*read as list state/);
  });
});

describe('bad input', () => {
  it('rejects non-finite timestamps, watermarks going back and inputs that do not exist', async () => {
    const h = await harness(lateSums);
    expect(() => h.push(ev('a', 1), Number.NaN)).toThrow(HarnessInputError);
    expect(() => h.push(ev('a', 1), Number.POSITIVE_INFINITY)).toThrow(/Infinity, not a finite number/);
    h.pushWatermark(100);
    expect(() => h.pushWatermark(99)).toThrow(/would go back from 100 to 99/);
    expect(() => h.push(ev('a', 1), 1, 1)).toThrow(/input 1 does not exist/);
    expect(() => h.state('nope', 'x', 'a')).toThrow(/operator 'nope' has no keyed state here; keyed operators: 'sum'/);
  });

  it('rethrows a user function\'s error from the push that caused it', async () => {
    const h = await harness((input: Flow<Ev>) =>
      input.pipe(
        keyBy((e: Ev) => e.k),
        process<Ev, Ev>({
          onElement(e, _ctx, out) {
            if (e.v < 0) throw new Error('negative');
            out.emit(e);
          },
        }),
      ),
    );
    h.push(ev('a', 1));
    expect(() => h.push(ev('a', -1))).toThrow('negative');
  });
});

describe('the README example', () => {
  interface Click {
    user: string;
    n: number;
  }
  const sumClicks = (a: Click, b: Click): Click => ({ user: a.user, n: a.n + b.n });
  const perKey = (input: Flow<Click>) =>
    input.pipe(keyBy((c: Click) => c.user), window(tumbling(3000), { allowedLateness: 1000 }), reduce(sumClicks, { uid: 'per-key' }));

  it('does what the README says', async () => {
    const h = await harness(perKey);
    h.push({ user: 'ada', n: 1 }, 1000);
    h.push({ user: 'ada', n: 2 }, 2000);
    h.pushWatermark(2999);
    expect(h.output()).toEqual([record({ user: 'ada', n: 3 }, 2999)]);
    expect(h.output({ watermarks: true })).toEqual([record({ user: 'ada', n: 3 }, 2999), watermark(2999)]);
    expect(h.state('per-key', 'window-contents', 'ada', '0:3000')).toEqual({ user: 'ada', n: 3 });
    h.pushWatermark(4000);
    h.push({ user: 'ada', n: 5 }, 100);
    expect(h.lateData()).toEqual([record({ user: 'ada', n: 5 }, 100)]);
  });
});
