// A harness snapshot restores into the heap and the LMDB backend alike: the same bytes, the same behaviour.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { heapStateBackend, keyBy, process, reduce, valueState, type Flow, type StateBackend } from 'weir';
import { lmdbStateBackend } from 'weir/node';
import { harness } from 'weir/testing';

interface Ev {
  k: string;
  v: number;
}
const ev = (k: string, v: number): Ev => ({ k, v });
const root = mkdtempSync(join(tmpdir(), 'weir-harness-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const last = valueState<number>('last');
/** A running sum per key, and the last value seen per key in a value state. */
const fragment = (input: Flow<Ev>) =>
  input.pipe(
    keyBy((e: Ev) => e.k),
    process<Ev, Ev>({ onElement: (e, ctx, out) => (ctx.state(last).update(e.v), out.emit(e)) }, { uid: 'last' }),
    keyBy((e: Ev) => e.k),
    reduce((a: Ev, b: Ev) => ev(a.k, a.v + b.v), { uid: 'sum' }),
  );

const backends: [string, () => StateBackend][] = [
  ['heap', () => heapStateBackend()],
  ['lmdb', () => lmdbStateBackend({ path: root })],
];

describe.each(backends)('taken on %s', (_from, taken) => {
  it.each(backends)('restores into %s with the same state and output', async (_to, restoredInto) => {
    const h = await harness(fragment, { stateBackend: taken() });
    for (const [k, v] of [['a', 1], ['b', 2], ['a', 3]] as const) h.push(ev(k, v));
    const snapshot = await h.snapshot();
    h.close();
    const restored = await harness(fragment, { stateBackend: restoredInto(), restore: snapshot });
    expect(restored.state('last', last, 'a')).toBe(3);
    expect(restored.state('sum', 'reduce', 'b')).toEqual(ev('b', 2));
    restored.push(ev('a', 10));
    expect(restored.values()).toEqual([ev('a', 14)]);
    restored.close();
  });
});
