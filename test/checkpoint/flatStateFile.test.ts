import { describe, expect, it } from 'vitest';
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
