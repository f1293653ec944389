import { describe, expect, it } from 'vitest';
import { autoSerializer } from 'weir';

/** What a checkpoint does with a value: encode, then JSON text, then back. */
const throughCheckpoint = <T>(value: T): T => {
  const serializer = autoSerializer<T>();
  return serializer.decode(JSON.parse(JSON.stringify(serializer.encode(value))), 1);
};

describe('autoSerializer', () => {
  it('stores plain JSON values as they are, strings inside arrays and objects included', () => {
    const serializer = autoSerializer<unknown>();
    for (const value of [{ key: 'k1', n: 3 }, ['a', 'b', 1], { tags: ['x', 'y'], inner: { name: 'n', ok: true, none: null } }, 'text', 0, 2.5]) {
      expect(serializer.encode(value)).toBe(value);
    }
  });

  it('keeps the values JSON would change: -0, NaN, infinities, undefined members, at any depth', () => {
    const values: unknown[] = [
      -0,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      { key: 'k', n: -0 },
      { key: 'k', n: Number.NEGATIVE_INFINITY },
      ['a', 'b', Number.NaN],
      ['a', undefined, 'b'],
      { key: 'k', missing: undefined },
      { names: ['x', 'y'], at: new Date(5) },
      { nested: [{ deep: ['s', { n: -0 }] }] },
    ];
    for (const value of values) {
      const serializer = autoSerializer<unknown>();
      expect(serializer.encode(value)).not.toBe(value);
      expect(throughCheckpoint(value)).toEqual(value);
    }
    expect(Object.is(throughCheckpoint(-0), -0)).toBe(true);
    expect(Object.is(throughCheckpoint({ n: -0 }).n, -0)).toBe(true);
    expect(Object.is(throughCheckpoint({ n: 0 }).n, 0)).toBe(true);
  });
});
