import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_PARALLELISM,
  NoKeyedContextError,
  NullStateValueError,
  StateDescriptorConflictError,
  StateMigrationError,
  aggregatingState,
  jsonSerializer,
  keyGroupOf,
  listState,
  mapState,
  reducingState,
  valueState,
  type AggregateFunction,
  type KeyGroupRange,
  type KeyedStateBackend,
  type KeyedStatePayload,
  type StateBackend,
} from 'weir';

const ALL_GROUPS: KeyGroupRange = { start: 0, end: DEFAULT_MAX_PARALLELISM - 1 };

/** Mean of numbers, with an accumulator mutated in place (Flink allows `add` to do so). */
const mean: AggregateFunction<number, { sum: number; n: number }, number> = {
  createAccumulator: () => ({ sum: 0, n: 0 }),
  add: (value, acc) => {
    acc.sum += value;
    acc.n += 1;
    return acc;
  },
  getResult: (acc) => acc.sum / acc.n,
  merge: (a, b) => ({ sum: a.sum + b.sum, n: a.n + b.n }),
};

/** A payload as it travels through a checkpoint file: JSON text and back. */
const throughJson = (payload: KeyedStatePayload): KeyedStatePayload => JSON.parse(JSON.stringify(payload)) as KeyedStatePayload;

/**
 * The behaviour every `StateBackend` must have for keyed state, exercised through `createKeyedBackend`. Each backend's
 * test file runs it with a factory for a fresh backend.
 * @example describeKeyedStateBackend('heap', () => heapStateBackend())
 */
export function describeKeyedStateBackend(name: string, create: () => StateBackend): void {
  describe(`${name} state backend (keyed state conformance)`, () => {
    const opened: KeyedStateBackend[] = [];
    const open = (keyGroupRange: KeyGroupRange = ALL_GROUPS, uid = 'op'): KeyedStateBackend => {
      const backend = create().createKeyedBackend({ uid, maxParallelism: DEFAULT_MAX_PARALLELISM, keyGroupRange });
      opened.push(backend);
      return backend;
    };
    /** Snapshots `backend` and loads the payload, as read back from a file, into a fresh backend. */
    const roundTrip = (backend: KeyedStateBackend, range?: KeyGroupRange): KeyedStateBackend => {
      const snapshot = backend.snapshot();
      const payload = throughJson(snapshot.materialize());
      snapshot.release();
      const restored = open(range);
      restored.restore([payload]);
      return restored;
    };

    let backend: KeyedStateBackend;
    beforeEach(() => {
      backend = open();
    });
    afterEach(() => {
      opened.splice(0).forEach((b) => b.dispose());
    });

    describe('ValueState', () => {
      it('reads undefined for a key without a value when the descriptor has no default', () => {
        const state = backend.getState(valueState<number>('v'));
        backend.setCurrentKey('a');
        expect(state.value()).toBeUndefined();
      });

      it('reads a fresh copy of the default per key: mutating one key’s default does not reach another', () => {
        const state = backend.getState(valueState<{ items: number[] }>('v', { default: { items: [] } }));
        backend.setCurrentKey('a');
        const forA = state.value()!;
        forA.items.push(1);
        state.update(forA);
        backend.setCurrentKey('b');
        expect(state.value()).toEqual({ items: [] });
        state.value()!.items.push(99);
        expect(state.value()).toEqual({ items: [] });
        backend.setCurrentKey('a');
        expect(state.value()).toEqual({ items: [1] });
      });

      it('updates, and clears with update(undefined) and clear()', () => {
        const state = backend.getState(valueState<string>('v', { default: 'none' }));
        backend.setCurrentKey('a');
        state.update('x');
        expect(state.value()).toBe('x');
        state.update(undefined);
        expect(state.value()).toBe('none');
        state.update('y');
        state.clear();
        expect(state.value()).toBe('none');
        expect(backend.keyCount()).toBe(0);
      });
    });

    describe('ListState', () => {
      it('reads an empty array, never null, for a key without elements', () => {
        const state = backend.getState(listState<number>('l'));
        backend.setCurrentKey('a');
        expect(state.get()).toEqual([]);
      });

      it('adds, adds all, replaces and clears', () => {
        const state = backend.getState(listState<number>('l'));
        backend.setCurrentKey('a');
        state.add(1);
        state.addAll([2, 3]);
        expect(state.get()).toEqual([1, 2, 3]);
        state.update([7]);
        expect(state.get()).toEqual([7]);
        state.update([]);
        expect(state.get()).toEqual([]);
        state.add(4);
        state.clear();
        expect(state.get()).toEqual([]);
      });

      it('hands out a copy: changing the returned array does not change the state', () => {
        const state = backend.getState(listState<number>('l'));
        backend.setCurrentKey('a');
        state.add(1);
        state.get().push(2);
        expect(state.get()).toEqual([1]);
      });

      it.each([null, undefined])('rejects adding %s with NullStateValueError', (nothing) => {
        const state = backend.getState(listState<number | null | undefined>('l'));
        backend.setCurrentKey('a');
        expect(() => state.add(nothing)).toThrow(NullStateValueError);
        expect(() => state.addAll([1, nothing])).toThrow(NullStateValueError);
        expect(() => state.update([nothing])).toThrow(NullStateValueError);
      });
    });

    describe('MapState', () => {
      it('reads as empty for a key without entries', () => {
        const state = backend.getState(mapState<string, number>('m'));
        backend.setCurrentKey('a');
        expect(state.isEmpty()).toBe(true);
        expect(state.get('x')).toBeUndefined();
        expect(state.contains('x')).toBe(false);
        expect(state.entries()).toEqual([]);
        expect(state.keys()).toEqual([]);
        expect(state.values()).toEqual([]);
      });

      it('puts, gets, removes and lists entries', () => {
        const state = backend.getState(mapState<string, number>('m'));
        backend.setCurrentKey('a');
        state.put('x', 1);
        state.putAll([
          ['y', 2],
          ['z', 3],
        ]);
        state.put('x', 10);
        expect(state.get('x')).toBe(10);
        expect(state.contains('y')).toBe(true);
        state.remove('y');
        state.remove('not-there');
        expect(state.contains('y')).toBe(false);
        expect(state.entries()).toEqual([
          ['x', 10],
          ['z', 3],
        ]);
        expect(state.keys()).toEqual(['x', 'z']);
        expect(state.values()).toEqual([10, 3]);
        expect(state.isEmpty()).toBe(false);
        state.clear();
        expect(state.isEmpty()).toBe(true);
      });

      it('is empty again once its last entry is removed', () => {
        const state = backend.getState(mapState<string, number>('m'));
        backend.setCurrentKey('a');
        state.put('x', 1);
        state.remove('x');
        expect(state.isEmpty()).toBe(true);
        expect(backend.keyCount()).toBe(0);
      });
    });

    describe('ReducingState', () => {
      it('reads undefined when nothing was added', () => {
        const state = backend.getState(reducingState<number>('r', (a, b) => a + b));
        backend.setCurrentKey('a');
        expect(state.get()).toBeUndefined();
      });

      it('reduces what was added, per key, until cleared', () => {
        const state = backend.getState(reducingState<number>('r', Math.max));
        backend.setCurrentKey('a');
        [3, 9, 4].forEach((n) => state.add(n));
        backend.setCurrentKey('b');
        state.add(-1);
        expect(state.get()).toBe(-1);
        backend.setCurrentKey('a');
        expect(state.get()).toBe(9);
        state.clear();
        expect(state.get()).toBeUndefined();
      });

      it('rejects adding null with NullStateValueError', () => {
        const state = backend.getState(reducingState<number | null>('r', (a, b) => a ?? b));
        backend.setCurrentKey('a');
        expect(() => state.add(null)).toThrow(NullStateValueError);
      });
    });

    describe('AggregatingState', () => {
      it('reads undefined when nothing was added, not the result of a fresh accumulator', () => {
        const state = backend.getState(aggregatingState('agg', mean));
        backend.setCurrentKey('a');
        // getResult of a fresh accumulator would be NaN (0 / 0).
        expect(state.get()).toBeUndefined();
      });

      it('aggregates what was added, per key, until cleared', () => {
        const state = backend.getState(aggregatingState('agg', mean));
        backend.setCurrentKey('a');
        [1, 2, 6].forEach((n) => state.add(n));
        backend.setCurrentKey('b');
        state.add(10);
        expect(state.get()).toBe(10);
        backend.setCurrentKey('a');
        expect(state.get()).toBe(3);
        state.clear();
        expect(state.get()).toBeUndefined();
      });
    });

    describe('keys and registration', () => {
      it('keeps state per key', () => {
        const state = backend.getState(valueState<string>('v'));
        for (const key of ['a', 1, true, 10n]) {
          backend.setCurrentKey(key);
          state.update(`value of ${String(key)} (${typeof key})`);
        }
        backend.setCurrentKey('1');
        expect(state.value()).toBeUndefined();
        backend.setCurrentKey(1);
        expect(state.value()).toBe('value of 1 (number)');
        backend.setCurrentKey(10n);
        expect(state.value()).toBe('value of 10 (bigint)');
        expect(backend.getCurrentKey()).toBe(10n);
        expect(backend.keyCount()).toBe(4);
      });

      it('shares state between two descriptors of the same name, kind and serializer', () => {
        const first = backend.getState(valueState<number>('v'));
        const second = backend.getState(valueState<number>('v'));
        backend.setCurrentKey('a');
        first.update(5);
        expect(second.value()).toBe(5);
      });

      it('rejects a state name registered again as another kind with StateDescriptorConflictError', () => {
        backend.getState(valueState<number>('s'));
        expect(() => backend.getState(listState<number>('s'))).toThrow(StateDescriptorConflictError);
        expect(() => backend.getState(listState<number>('s'))).toThrow(/'s'/);
      });

      it('rejects a state name registered again with another serializer with StateDescriptorConflictError', () => {
        backend.getState(valueState<number>('s'));
        expect(() => backend.getState(valueState<number>('s', { serializer: jsonSerializer() }))).toThrow(StateDescriptorConflictError);
      });

      it('rejects state access while no key is current with NoKeyedContextError', () => {
        const value = backend.getState(valueState<number>('v'));
        const list = backend.getState(listState<number>('l'));
        expect(() => value.value()).toThrow(NoKeyedContextError);
        expect(() => value.update(1)).toThrow(NoKeyedContextError);
        expect(() => list.add(1)).toThrow(NoKeyedContextError);
      });
    });

    describe('reading for queries (keysOf, peek)', () => {
      it('lists the keys of a state and peeks at copies of their values without changing the current key', () => {
        const counts = backend.getState(valueState<{ n: number }>('counts', { default: { n: 0 } }));
        const pages = backend.getState(mapState<string, number>('pages'));
        for (const key of ['a', 'b', 'c']) {
          backend.setCurrentKey(key);
          counts.update({ n: key.charCodeAt(0) });
          if (key !== 'b') pages.put('p', 1);
        }
        backend.setCurrentKey('b');
        expect(Array.from(backend.keysOf(valueState('counts'))).sort()).toEqual(['a', 'b', 'c']);
        expect(Array.from(backend.keysOf(mapState('pages'))).sort()).toEqual(['a', 'c']);
        const peeked = backend.peek(valueState<{ n: number }>('counts'), 'a')!;
        expect(peeked).toEqual({ n: 97 });
        peeked.n = -1;
        expect(backend.peek(valueState('counts'), 'a')).toEqual({ n: 97 });
        expect(backend.peek(mapState<string, number>('pages'), 'c')).toEqual(new Map([['p', 1]]));
        // No value and no default: undefined, whatever the descriptor's default.
        expect(backend.peek(valueState('counts'), 'zz')).toBeUndefined();
        expect(backend.peek(mapState('pages'), 'b')).toBeUndefined();
        expect(backend.getCurrentKey()).toBe('b');
        expect(counts.value()).toEqual({ n: 98 });
      });

      it('reads restored state', () => {
        const state = backend.getState(listState<number>('l'));
        backend.setCurrentKey(7);
        state.add(1);
        const restored = roundTrip(backend);
        expect(Array.from(restored.keysOf(listState('l')))).toEqual([7]);
        expect(restored.peek(listState<number>('l'), 7)).toEqual([1]);
      });
    });

    describe('snapshots', () => {
      it('never show writes made after snapshot(), of any kind', () => {
        const value = backend.getState(valueState<{ n: number }>('value'));
        const list = backend.getState(listState<number>('list'));
        const map = backend.getState(mapState<string, number>('map'));
        const reducing = backend.getState(reducingState<number>('reducing', (a, b) => a + b));
        const aggregating = backend.getState(aggregatingState('aggregating', mean));
        for (const key of ['a', 'b', 'gone']) {
          backend.setCurrentKey(key);
          value.update({ n: 1 });
          list.add(1);
          map.put('x', 1);
          reducing.add(1);
          aggregating.add(1);
        }

        const snapshot = backend.snapshot();

        backend.setCurrentKey('a');
        value.value()!.n = 666; // in place, without update()
        value.update({ n: 2 });
        list.add(2);
        map.put('y', 2);
        map.put('x', 2);
        reducing.add(2);
        aggregating.add(3);
        backend.setCurrentKey('b');
        value.value()!.n = 777; // in place only
        list.update([9]);
        map.remove('x');
        backend.setCurrentKey('gone');
        value.clear();
        list.clear();
        map.clear();
        reducing.clear();
        aggregating.clear();
        backend.setCurrentKey('new');
        value.update({ n: 3 });
        list.add(3);

        const restored = open();
        restored.restore([throughJson(snapshot.materialize())]);
        snapshot.release();
        const r = {
          value: restored.getState(valueState<{ n: number }>('value')),
          list: restored.getState(listState<number>('list')),
          map: restored.getState(mapState<string, number>('map')),
          reducing: restored.getState(reducingState<number>('reducing', (a, b) => a + b)),
          aggregating: restored.getState(aggregatingState('aggregating', mean)),
        };
        for (const key of ['a', 'b', 'gone']) {
          restored.setCurrentKey(key);
          expect(r.value.value(), key).toEqual({ n: 1 });
          expect(r.list.get(), key).toEqual([1]);
          expect(r.map.entries(), key).toEqual([['x', 1]]);
          expect(r.reducing.get(), key).toBe(1);
          expect(r.aggregating.get(), key).toBe(1);
        }
        restored.setCurrentKey('new');
        expect(r.value.value()).toBeUndefined();
        expect(r.list.get()).toEqual([]);
        expect(restored.keyCount()).toBe(3);
      });

      it('leave the live state as written after the snapshot', () => {
        const list = backend.getState(listState<number>('list'));
        backend.setCurrentKey('a');
        list.add(1);
        const snapshot = backend.snapshot();
        list.add(2);
        snapshot.materialize();
        snapshot.release();
        list.add(3);
        expect(list.get()).toEqual([1, 2, 3]);
      });

      it('see exactly the writes made before each of two overlapping snapshots', () => {
        const state = backend.getState(valueState<number>('v'));
        backend.setCurrentKey('a');
        state.update(1);
        const first = backend.snapshot();
        state.update(2);
        const second = backend.snapshot();
        state.update(3);
        const readBack = (snapshot: ReturnType<KeyedStateBackend['snapshot']>) => {
          const restored = open();
          restored.restore([throughJson(snapshot.materialize())]);
          snapshot.release();
          restored.setCurrentKey('a');
          return restored.getState(valueState<number>('v')).value();
        };
        expect(readBack(second)).toBe(2);
        expect(readBack(first)).toBe(1);
      });

      it('round-trip rich values (Date, Map, Set, BigInt) with the default serializer', () => {
        type Rich = { at: Date; tags: Set<string>; big: bigint; nested: Map<string, Date> };
        const rich: Rich = {
          at: new Date('2024-01-02T03:04:05.678Z'),
          tags: new Set(['x', 'y']),
          big: 12345678901234567890n,
          nested: new Map([['k', new Date(0)]]),
        };
        backend.setCurrentKey(7n);
        backend.getState(valueState<Rich>('rich')).update(rich);
        backend.getState(listState<Date>('dates')).add(new Date(5));
        backend.getState(mapState<bigint, Set<number>>('sets')).put(1n, new Set([1, 2]));
        backend.getState(valueState<{ plain: number[] }>('plain')).update({ plain: [1, 2] });

        const restored = roundTrip(backend);
        restored.setCurrentKey(7n);
        expect(restored.getState(valueState<Rich>('rich')).value()).toEqual(rich);
        expect(restored.getState(listState<Date>('dates')).get()).toEqual([new Date(5)]);
        expect(restored.getState(mapState<bigint, Set<number>>('sets')).get(1n)).toEqual(new Set([1, 2]));
        expect(restored.getState(valueState<{ plain: number[] }>('plain')).value()).toEqual({ plain: [1, 2] });
      });

      it('round-trip keys of every type', () => {
        const state = backend.getState(valueState<string>('v'));
        const keys = ['k', 0, -1.5, false, 2n ** 70n];
        for (const key of keys) {
          backend.setCurrentKey(key);
          state.update(String(key));
        }
        const restored = roundTrip(backend);
        const read = restored.getState(valueState<string>('v'));
        for (const key of keys) {
          restored.setCurrentKey(key);
          expect(read.value()).toBe(String(key));
        }
        expect(restored.keyCount()).toBe(keys.length);
      });

      it('include restored state that was not read since the restore', () => {
        backend.setCurrentKey('a');
        backend.getState(valueState<number>('untouched')).update(1);
        backend.getState(valueState<number>('touched')).update(2);
        const middle = roundTrip(backend);
        middle.setCurrentKey('a');
        middle.getState(valueState<number>('touched')).update(3);

        const last = roundTrip(middle);
        last.setCurrentKey('a');
        expect(last.getState(valueState<number>('untouched')).value()).toBe(1);
        expect(last.getState(valueState<number>('touched')).value()).toBe(3);
      });
    });

    describe('restore', () => {
      it('loads only the keys of its key-group range', () => {
        const state = backend.getState(valueState<string>('v'));
        const keys = Array.from({ length: 64 }, (_, i) => `key-${i}`);
        for (const key of keys) {
          backend.setCurrentKey(key);
          state.update(key);
        }
        const range = { start: 0, end: DEFAULT_MAX_PARALLELISM / 2 - 1 };
        const inRange = (key: string) => keyGroupOf(key, DEFAULT_MAX_PARALLELISM) <= range.end;
        expect(keys.some(inRange) && !keys.every(inRange)).toBe(true);

        const restored = roundTrip(backend, range);
        const read = restored.getState(valueState<string>('v'));
        for (const key of keys) {
          restored.setCurrentKey(key);
          expect(read.value(), key).toBe(inRange(key) ? key : undefined);
        }
        expect(restored.keyCount()).toBe(keys.filter(inRange).length);
      });

      it('counts a key once when it holds both restored-but-unread and live state', () => {
        backend.setCurrentKey('a');
        backend.getState(valueState<number>('x')).update(1);
        backend.getState(valueState<number>('y')).update(2);
        backend.setCurrentKey(3);
        backend.getState(valueState<number>('x')).update(3);
        const restored = roundTrip(backend);
        restored.getState(valueState<number>('x'));
        expect(restored.keyCount()).toBe(2);
      });

      it('rejects reading a state restored as another kind with StateMigrationError', () => {
        backend.setCurrentKey('a');
        backend.getState(valueState<number[]>('s')).update([1]);
        const restored = roundTrip(backend);
        expect(() => restored.getState(listState<number>('s'))).toThrow(StateMigrationError);
        expect(() => restored.getState(listState<number>('s'))).toThrow(/'s'/);
        restored.setCurrentKey('a');
        expect(restored.getState(valueState<number[]>('s')).value()).toEqual([1]);
      });

      it('rejects reading a state restored under another serializer with StateMigrationError', () => {
        backend.setCurrentKey('a');
        backend.getState(valueState<number>('s')).update(1);
        const restored = roundTrip(backend);
        expect(() => restored.getState(valueState<number>('s', { serializer: jsonSerializer() }))).toThrow(StateMigrationError);
      });
    });
  });
}
