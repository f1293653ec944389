import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../src/storage/bufferPool';
import { FlatStateFileBuilder, decodeFile, encodeFile } from '../../src/storage/fileFormat';

const states = [{ name: 'v', kind: 'value', serializer: 'auto', serializerVersion: 1 }];

describe('a state file built piece by piece (FlatStateFileBuilder)', () => {
  it('reads back as the payload encodeFile writes of the pieces joined, non-ASCII text, namespaces and operator state included', () => {
    const pieces = [
      { flat: [0, 'k1', { n: 1 }, 0, 'ключ', { s: '日本語 ✓ \u{1F600}' }] },
      { flatNamespaced: [0, 'k2', [1, 2], 'w-1'] },
      { flat: [0, 'k3', null], flatNamespaced: [0, 'k4', 'x'.repeat(70_000), 'w-2'] },
    ];
    const builder = new FlatStateFileBuilder('sum', states, [0, 127]);
    for (const piece of pieces) builder.add(piece);
    expect(builder.entries).toBe(5);
    const built = builder.finish({ offset: 3 });
    const joined = {
      uid: 'sum',
      keyed: { states, keyGroups: [], flat: pieces.flatMap((p) => p.flat ?? []), flatNamespaced: pieces.flatMap((p) => p.flatNamespaced ?? []), range: [0, 127] },
      operator: { offset: 3 },
    };
    expect(decodeFile('state', built, 'built')).toEqual(decodeFile('state', encodeFile('state', joined), 'encoded'));
    expect(new TextDecoder().decode(built.subarray(0, built.indexOf(10)))).toMatch(/"version":2/);
  });

  it('leaves out the lists it has no entries for, and operator state it is not given', () => {
    const builder = new FlatStateFileBuilder('sum', states, [4, 9]);
    builder.add({ flatNamespaced: [0, 'k', 1, 'w'] });
    expect(decodeFile('state', builder.finish(undefined), 'built')).toEqual({
      uid: 'sum',
      keyed: { states, keyGroups: [], flatNamespaced: [0, 'k', 1, 'w'], range: [4, 9] },
    });
  });
});

describe('state files built into reused buffers (BufferPool)', () => {
  const entries = (from: number, count: number, value: (i: number) => unknown) => Array.from({ length: count }, (_, i) => [0, `k${from + i}`, value(from + i)]).flat();
  const build = (pieces: unknown[][], pool: BufferPool, expected = 0) => {
    const builder = new FlatStateFileBuilder('sum', states, [0, 127], expected, pool);
    for (const flat of pieces) builder.add({ flat });
    return builder.finish(undefined);
  };
  const payload = (flat: unknown[]) => ({ uid: 'sum', keyed: { states, keyGroups: [], flat, range: [0, 127] } });

  it('reads back whatever the buffer held before, growing past it mid-text, non-ASCII included', () => {
    const pool = new BufferPool(1 << 20);
    // A dirty buffer (a file starts in 64 KiB) too small for the file: the second piece is encoded partly, then grown.
    pool.give(new Uint8Array(70_000).fill(0x7b));
    const pieces = [entries(0, 20, (i) => ({ n: i })), entries(20, 2000, (i) => ({ s: `日本語 ✓ \u{1F600} ${i}` }))];
    const file = build(pieces, pool);
    expect(file.buffer.byteLength).toBeGreaterThan(70_000);
    expect(decodeFile('state', file, 'built')).toEqual(payload(pieces.flat()));
    // The next file goes into the grown buffer given back, over this one's bytes.
    pool.give(file);
    const next = [entries(0, 3, () => 'x')];
    expect(decodeFile('state', build(next, pool), 'next')).toEqual(payload(next.flat()));
  });

  it('sizes a file from its first pieces when told how many entries it will hold', () => {
    const pieces = Array.from({ length: 40 }, (_, p) => entries(p * 256, 256, (i) => ({ key: `k${i}`, n: i })));
    const file = build(pieces, new BufferPool(0), 40 * 256);
    expect(decodeFile('state', file, 'sized')).toEqual(payload(pieces.flat()));
    // One buffer for the whole file (the first 64 KiB, then the one sized for it), an eighth or so over its size.
    expect(file.buffer.byteLength).toBeGreaterThanOrEqual(file.length);
    expect(file.buffer.byteLength).toBeLessThan(file.length * 1.25);
  });

  it('hands out the largest idle buffer big enough, and keeps no more than its bytes', () => {
    const pool = new BufferPool(3000);
    const small = new Uint8Array(1000);
    const large = new Uint8Array(2000);
    pool.give(small);
    pool.give(large.subarray(10, 20));
    // Over the bound: dropped.
    pool.give(new Uint8Array(500));
    const first = pool.take(100);
    expect([first.buffer === large.buffer, first.length]).toEqual([true, 2000]);
    expect(pool.take(100)).toBe(small);
    // Empty (the 500 bytes were dropped): new buffers, of `size` when asked for more than the least.
    expect(pool.take(100).length).toBe(100);
    expect(pool.take(5000, 6000).length).toBe(6000);
  });
});
