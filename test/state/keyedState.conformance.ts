import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { allEntries } from '../support/payloadEntries';
import { unbucketedCount } from '../../src/state/payloadEntries';
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
  type ListState,
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
      // A clock stopped at 0, for the states with a TTL (nothing they hold expires).
      const clock = { processingTime: () => 0, eventTime: () => 0 };
      const backend = create().createKeyedBackend({ uid, maxParallelism: DEFAULT_MAX_PARALLELISM, keyGroupRange, clock });
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

    /** Bulk writes check every element first: a rejected call changes nothing, with or without a TTL. */
    describe.each([
      ['without a TTL', undefined],
      ['with a TTL', { ttl: 1_000 }],
    ] as const)('rejected bulk writes, %s', (_label, ttl) => {
      /** An iterable that can be read only once, as a generator is. */
      function* once<T>(values: readonly T[]): Generator<T> {
        yield* values;
      }

      it.each([
        ['addAll', (state: ListState<number | null>, values: (number | null)[]) => state.addAll(values)],
        ['update', (state: ListState<number | null>, values: (number | null)[]) => state.update(values)],
        ['addAll of a one-pass iterable', (state: ListState<number | null>, values: (number | null)[]) => state.addAll(once(values))],
        ['update of a one-pass iterable', (state: ListState<number | null>, values: (number | null)[]) => state.update(once(values))],
      ] as const)('list %s with a null element writes none of them', (_call, write) => {
        const state = backend.getState(listState<number | null>('l', { ttl }));
        backend.setCurrentKey('a');
        state.add(1);
        expect(() => write(state, [3, null, 5])).toThrow(/state 'l': \w+ was given null at index 1, so nothing was written/);
        expect(state.get()).toEqual([1]);
        backend.setCurrentKey('fresh');
        expect(() => write(state, [3, null])).toThrow(NullStateValueError);
        expect(state.get()).toEqual([]);
        expect(backend.keyCount()).toBe(1);
        expect(roundTrip(backend).keyCount()).toBe(1);
      });

      it.each([
        ['entries', (entries: [string, number | undefined][]) => entries],
        ['a Map', (entries: [string, number | undefined][]) => new Map(entries)],
        ['a one-pass iterable', (entries: [string, number | undefined][]) => once(entries)],
      ] as const)('map putAll of %s with an undefined value writes none of them', (_form, as) => {
        const state = backend.getState(mapState<string, number | undefined>('m', { ttl }));
        backend.setCurrentKey('a');
        state.put('x', 1);
        expect(() => state.putAll(as([['y', 2], ['z', undefined], ['w', 4]]))).toThrow(/state 'm': putAll was given undefined for map key z, so nothing was written/);
        expect(state.entries()).toEqual([['x', 1]]);
        backend.setCurrentKey('fresh');
        expect(() => state.putAll(as([['y', 2], ['z', undefined]]))).toThrow(NullStateValueError);
        expect(state.isEmpty()).toBe(true);
        expect(roundTrip(backend).keyCount()).toBe(1);
      });

      it('accept bulk writes of every form once nothing is null', () => {
        const list = backend.getState(listState<number>('l', { ttl }));
        const map = backend.getState(mapState<string, number>('m', { ttl }));
        backend.setCurrentKey('a');
        const given = [1, 2];
        list.addAll(given);
        list.addAll(once([3]));
        given.push(99);
        expect(list.get()).toEqual([1, 2, 3]);
        list.update(once([4, 5]));
        expect(list.get()).toEqual([4, 5]);
        list.addAll([]);
        map.putAll(new Map([['x', 1]]));
        map.putAll(once([['y', 2]] as [string, number][]));
        map.putAll([]);
        expect(map.entries()).toEqual([['x', 1], ['y', 2]]);
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

      it('hands out one state object per name, whichever descriptor asks, and reports each state registered once', () => {
        const registered: string[] = [];
        const clock = { processingTime: () => 0, eventTime: () => 0 };
        const own = create().createKeyedBackend({
          uid: 'op',
          maxParallelism: DEFAULT_MAX_PARALLELISM,
          keyGroupRange: ALL_GROUPS,
          clock,
          onStateRegistered: (descriptor) => registered.push(descriptor.name),
        });
        opened.push(own);
        const first = own.getState(valueState<number>('v'));
        expect(own.getState(valueState<number>('v'))).toBe(first);
        expect(own.getState(listState<number>('l'))).toBe(own.getState(listState<number>('l')));
        expect(registered).toEqual(['v', 'l']);
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
      it('never show in-place changes deep inside a value, made after snapshot()', () => {
        type Nested = { n: number; tags: string[]; inner: { m: number; at?: Date }; rows: { id: number }[] };
        const value = backend.getState(valueState<Nested>('nested'));
        // Plain data only, and with a Date inside (copied another way).
        const original = (key: string): Nested => ({ n: 1, tags: ['x'], inner: key === 'a' ? { m: 1 } : { m: 1, at: new Date(1_000) }, rows: [{ id: 1 }] });
        for (const key of ['a', 'b']) {
          backend.setCurrentKey(key);
          value.update(original(key));
        }
        const snapshot = backend.snapshot();
        for (const key of ['a', 'b']) {
          backend.setCurrentKey(key);
          const live = value.value()!;
          live.n = 2;
          live.tags.push('y');
          live.inner.m = 2;
          live.inner.at?.setTime(2_000);
          live.rows[0]!.id = 2;
          live.rows.push({ id: 3 });
        }

        const restored = open();
        restored.restore([throughJson(snapshot.materialize())]);
        snapshot.release();
        for (const key of ['a', 'b']) {
          restored.setCurrentKey(key);
          expect(restored.getState(valueState<Nested>('nested')).value(), key).toEqual(original(key));
          backend.setCurrentKey(key);
          expect(value.value(), key).toMatchObject({ n: 2, tags: ['x', 'y'], inner: { m: 2 }, rows: [{ id: 2 }, { id: 3 }] });
        }
      });

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

      it('read in chunks, see the state as of snapshot() and leave the live state as written since', () => {
        const value = backend.getState(valueState<number>('value'));
        for (let i = 0; i < 10; i++) {
          backend.setCurrentKey(`k${i}`);
          value.update(i);
        }
        const snapshot = backend.snapshot();
        // Between the barrier and the first chunk: a key changed, one removed, one removed and added back, one new.
        const written: [string, number | undefined][] = [['k1', 100], ['k2', undefined], ['k3', undefined], ['k3', 300], ['new', 1]];
        for (const [key, next] of written) {
          backend.setCurrentKey(key);
          value.update(next);
        }
        const restored = open();
        for (const chunk of snapshot.materializeChunks(3)) restored.restore([throughJson(chunk)]);
        snapshot.release();
        const read = (from: KeyedStateBackend, keys: string[]) =>
          keys.map((key) => {
            from.setCurrentKey(key);
            return from.getState(valueState<number>('value')).value();
          });
        const keys = [...Array.from({ length: 10 }, (_, i) => `k${i}`), 'new'];
        expect(read(restored, keys)).toEqual([...Array.from({ length: 10 }, (_, i) => i), undefined]);
        expect(read(backend, keys)).toEqual([0, 100, undefined, 300, 4, 5, 6, 7, 8, 9, 1]);
        expect(backend.keyCount()).toBe(10);
      });

      it('of a large state (25 000 keys of every type) see it as of snapshot() and restore it whole', () => {
        const value = backend.getState(valueState<number>('value'));
        // Keys of every type, many alike in their last characters.
        const keys = [
          ...Array.from({ length: 20_000 }, (_, i) => `k${i}`),
          ...Array.from({ length: 3_000 }, (_, i) => `user-${i}@example.com`),
          ...Array.from({ length: 2_000 }, (_, i) => i * 7.5),
          ...Array.from({ length: 50 }, (_, i) => BigInt(i) * 10n ** 20n),
          true,
          false,
        ];
        keys.forEach((key, i) => {
          backend.setCurrentKey(key);
          value.update(i);
        });
        // Removed before the snapshot: gone in both.
        for (let i = 0; i < keys.length; i += 10) {
          backend.setCurrentKey(keys[i]!);
          value.clear();
        }
        const snapshot = backend.snapshot();
        // After it: changed, removed and new keys, which the snapshot must not see.
        for (let i = 1; i < keys.length; i += 7) {
          backend.setCurrentKey(keys[i]!);
          if (i % 2 === 0) value.clear();
          else value.update(-i);
        }
        backend.setCurrentKey('new');
        value.update(1);
        const restored = open();
        for (const chunk of snapshot.materializeChunks(4_096)) restored.restore([throughJson(chunk)]);
        snapshot.release();
        const read = (from: KeyedStateBackend) =>
          keys.map((key) => {
            from.setCurrentKey(key);
            return from.getState(valueState<number>('value')).value();
          });
        const asOfSnapshot = keys.map((_, i) => (i % 10 === 0 ? undefined : i));
        expect(read(restored)).toEqual(asOfSnapshot);
        expect(restored.keyCount()).toBe(keys.length - Math.ceil(keys.length / 10));
        expect(read(backend)).toEqual(asOfSnapshot.map((before, i) => (i % 7 !== 1 ? before : i % 2 === 0 ? undefined : -i)));
        expect([...backend.keysOf(valueState<number>('value'))]).toHaveLength(
          keys.length - keys.filter((_, i) => i % 10 === 0 || (i % 7 === 1 && i % 2 === 0 && i % 10 !== 0)).length + 1,
        );
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

      it('leaves the payloads it restores as they were, whatever is read, written and snapshotted after', () => {
        const state = backend.getState(valueState<{ n: number }>('v'));
        for (let i = 0; i < 20; i++) {
          backend.setCurrentKey(`k${i}`);
          state.update({ n: i });
        }
        const payload = throughJson(backend.snapshot().materialize());
        const copy = structuredClone(payload);
        const restored = open();
        restored.restore([payload]);
        // Snapshotted unread (the restored entries passed on), then read, changed and snapshotted again.
        const unread = restored.snapshot().materialize();
        const read = restored.getState(valueState<{ n: number }>('v'));
        restored.setCurrentKey('k3');
        read.update({ n: 33 });
        restored.setCurrentKey('k4');
        read.clear();
        const written = restored.snapshot().materialize();
        expect(payload).toEqual(copy);
        expect(allEntries(unread).length).toBe(20);
        expect(allEntries(written).length).toBe(19);
      });

      it('rejects an unbucketed entry that names a state its payload does not declare, with StateMigrationError', () => {
        const states = [{ name: 'v', kind: 'value' as const, serializer: 'auto', serializerVersion: 1 }];
        const restore = (payload: Partial<KeyedStatePayload>) => () => open().restore([{ states, keyGroups: [], range: [0, ALL_GROUPS.end], ...payload }]);
        expect(restore({ flat: [0, 'a', 1, 1, 'b', 2] })).toThrow(StateMigrationError);
        expect(restore({ flatNamespaced: [1, 'a', 1, 'w'] })).toThrow(/names state #1/);
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

    describe('namespaces (window state)', () => {
      it('keeps each namespace of a key apart from the void one and from the others', () => {
        const value = backend.getState(valueState<number>('v'));
        const map = backend.getState(mapState<string, number>('m'));
        backend.setCurrentKey('a');
        value.update(0);
        map.put('x', 0);
        backend.setCurrentNamespace('w1');
        expect(value.value()).toBeUndefined();
        expect(map.isEmpty()).toBe(true);
        value.update(1);
        map.put('x', 1);
        backend.setCurrentNamespace('w2');
        value.update(2);
        backend.setCurrentNamespace('w1');
        expect(value.value()).toBe(1);
        expect(map.entries()).toEqual([['x', 1]]);
        value.clear();
        map.clear();
        backend.setCurrentNamespace('');
        expect(value.value()).toBe(0);
        expect(map.entries()).toEqual([['x', 0]]);
        expect(Array.from(backend.keysOf(valueState<number>('v'), 'w2'))).toEqual(['a']);
        expect(Array.from(backend.keysOf(valueState<number>('v'), 'w1'))).toEqual([]);
        expect(backend.peek(valueState<number>('v'), 'a', 'w2')).toBe(2);
      });

      it('merges namespaces per state kind and clears the sources', () => {
        const list = backend.getState(listState<number>('l'));
        const reducing = backend.getState(reducingState<number>('r', (a, b) => a + b));
        const aggregating = backend.getState(aggregatingState('g', mean));
        const map = backend.getState(mapState<string, number>('m'));
        backend.setCurrentKey('a');
        for (const [namespace, n] of [['w1', 1], ['w2', 2], ['w3', 3]] as const) {
          backend.setCurrentNamespace(namespace);
          list.add(n);
          reducing.add(n);
          aggregating.add(n);
          map.put(`k${n}`, n);
          map.put('shared', n);
        }
        for (const descriptor of [listState<number>('l'), reducingState<number>('r', (a, b) => a + b), aggregatingState('g', mean), mapState<string, number>('m')]) {
          backend.mergeNamespaces(descriptor, 'w1', ['w2', 'w3']);
        }
        backend.setCurrentNamespace('w1');
        expect(list.get()).toEqual([1, 2, 3]);
        expect(reducing.get()).toBe(6);
        expect(aggregating.get()).toBe(2);
        expect(new Map(map.entries())).toEqual(new Map([['k1', 1], ['k2', 2], ['k3', 3], ['shared', 3]]));
        for (const namespace of ['w2', 'w3']) {
          backend.setCurrentNamespace(namespace);
          expect(list.get()).toEqual([]);
          expect(reducing.get()).toBeUndefined();
          expect(map.isEmpty()).toBe(true);
        }
      });

      it('carries namespaces through snapshot and restore', () => {
        const list = backend.getState(listState<number>('l'));
        const map = backend.getState(mapState<string, number>('m'));
        backend.setCurrentKey('a');
        list.add(0);
        backend.setCurrentNamespace('w1');
        list.add(1);
        map.put('x', 1);
        backend.setCurrentKey(7);
        backend.setCurrentNamespace('w2');
        list.add(2);
        const snapshot = backend.snapshot();
        const payload = throughJson(snapshot.materialize());
        snapshot.release();
        const namespaces = allEntries(payload).map((entry) => entry[3]).sort();
        expect(namespaces).toEqual(['w1', 'w1', 'w2', undefined]);
        const restored = open();
        restored.restore([payload]);
        const rList = restored.getState(listState<number>('l'));
        const rMap = restored.getState(mapState<string, number>('m'));
        restored.setCurrentKey('a');
        expect(rList.get()).toEqual([0]);
        restored.setCurrentNamespace('w1');
        expect(rList.get()).toEqual([1]);
        expect(rMap.entries()).toEqual([['x', 1]]);
        restored.setCurrentKey(7);
        restored.setCurrentNamespace('w2');
        expect(rList.get()).toEqual([2]);
      });
    });

    describe('deltas (materializeChangeChunks, for incremental checkpoints)', () => {
      const tracking = () => {
        const tracked = create().createKeyedBackend({ uid: 'op', maxParallelism: DEFAULT_MAX_PARALLELISM, keyGroupRange: ALL_GROUPS, trackChanges: true });
        opened.push(tracked);
        return tracked;
      };
      const entriesOf = (chunks: Iterable<KeyedStatePayload>) => Array.from(chunks, throughJson);

      it('hold only what changed since the previous snapshot, and restore on top of it', () => {
        const tracked = tracking();
        const value = tracked.getState(valueState<number>('v'));
        const map = tracked.getState(mapState<string, number>('m'));
        const list = tracked.getState(listState<number>('l'));
        for (let i = 0; i < 100; i++) {
          tracked.setCurrentKey(`k${i}`);
          value.update(i);
          map.put('a', i);
          tracked.setCurrentNamespace('w');
          list.add(i);
          tracked.setCurrentNamespace('');
        }
        const first = tracked.snapshot();
        const base = entriesOf(first.materializeChunks(1_000));
        first.release();
        tracked.setCurrentKey('k1');
        value.update(-1);
        map.put('b', 2);
        tracked.setCurrentKey('k2');
        value.clear();
        map.remove('a');
        tracked.setCurrentNamespace('w');
        list.add(22);
        tracked.setCurrentKey('k3');
        list.clear();
        tracked.setCurrentNamespace('');
        tracked.setCurrentKey('new');
        value.update(7);
        const second = tracked.snapshot();
        tracked.setCurrentKey('k4');
        value.update(444); // after the snapshot: not in its delta
        expect(second.materializeChangeChunks).toBeDefined();
        const delta = entriesOf(second.materializeChangeChunks!(1_000));
        second.release();
        const written = delta.flatMap((chunk) => chunk.keyGroups.flatMap(([, entries]) => entries.map((entry) => `${String(entry[1])}/${entry[3] ?? ''}`)));
        const removed = delta.flatMap((chunk) => (chunk.removed ?? []).flatMap(([, entries]) => entries.map((entry) => `${String(entry[1])}/${entry[2] ?? ''}`)));
        expect(written.sort()).toEqual(['k1/', 'k1/', 'k2/w', 'new/'].sort());
        expect(removed.sort()).toEqual(['k2/', 'k2/', 'k3/w'].sort());

        const restored = open();
        for (const payload of [...base, ...delta]) restored.restore([payload]);
        const r = { value: restored.getState(valueState<number>('v')), map: restored.getState(mapState<string, number>('m')), list: restored.getState(listState<number>('l')) };
        restored.setCurrentKey('k1');
        expect(r.value.value()).toBe(-1);
        expect(r.map.entries()).toEqual([['a', 1], ['b', 2]]);
        restored.setCurrentKey('k2');
        expect(r.value.value()).toBeUndefined();
        expect(r.map.isEmpty()).toBe(true);
        restored.setCurrentNamespace('w');
        expect(r.list.get()).toEqual([2, 22]);
        restored.setCurrentKey('k3');
        expect(r.list.get()).toEqual([]);
        restored.setCurrentNamespace('');
        restored.setCurrentKey('k4');
        expect(r.value.value()).toBe(4);
        restored.setCurrentKey('new');
        expect(r.value.value()).toBe(7);
      });

      it('are empty when nothing changed, and absent without trackChanges', () => {
        const tracked = tracking();
        tracked.setCurrentKey('a');
        tracked.getState(valueState<number>('v')).update(1);
        tracked.snapshot().release();
        const quiet = tracked.snapshot();
        expect(Array.from(quiet.materializeChangeChunks!(10))).toEqual([]);
        quiet.release();
        const untracked = backend.snapshot();
        expect(untracked.materializeChangeChunks).toBeUndefined();
        untracked.release();
      });
    });

    describe('chunked snapshots (materializeChunks)', () => {
      const fill = (keys: number) => {
        const value = backend.getState(valueState<number>('v'));
        const map = backend.getState(mapState<string, number>('m'));
        for (let i = 0; i < keys; i++) {
          backend.setCurrentKey(`k${i}`);
          value.update(i);
          if (i % 10 === 0) {
            backend.setCurrentNamespace('w');
            value.update(-i);
            map.put('a', i);
            map.put('b', i);
            backend.setCurrentNamespace('');
          }
        }
      };

      it('yields whole key groups in ascending order, each chunk bounded, together equal to materialize', () => {
        fill(2_000);
        const whole = backend.snapshot();
        const expected = throughJson(whole.materialize());
        whole.release();
        const snapshot = backend.snapshot();
        const chunks = Array.from(snapshot.materializeChunks(100), throughJson);
        snapshot.release();
        expect(chunks.length).toBeGreaterThan(5);
        const groups = chunks.flatMap((chunk) => chunk.keyGroups.map(([keyGroup]) => keyGroup));
        expect(groups).toEqual([...new Set(groups)].sort((a, b) => a - b));
        for (const chunk of chunks) {
          expect(chunk.states).toEqual(expected.states);
          // Unbucketed entries (a heap full snapshot) come at most `maxEntries` a chunk, with the instance's range.
          if (chunk.flat !== undefined || chunk.flatNamespaced !== undefined) {
            expect(chunk.keyGroups).toEqual([]);
            expect(unbucketedCount(chunk)).toBeLessThanOrEqual(100);
            expect(chunk.range).toEqual([ALL_GROUPS.start, ALL_GROUPS.end]);
          } else expect(chunk.keyGroups.reduce((n, [, entries]) => n + entries.length, 0)).toBeLessThan(200);
        }
        const sort = (entries: unknown[]) => entries.map((entry) => JSON.stringify(entry)).sort();
        expect(sort(chunks.flatMap(allEntries))).toEqual(sort(allEntries(expected)));
        const restored = open();
        for (const chunk of chunks) restored.restore([chunk]);
        restored.setCurrentKey('k1990');
        expect(restored.getState(valueState<number>('v')).value()).toBe(1990);
        restored.setCurrentNamespace('w');
        expect(restored.getState(mapState<string, number>('m')).entries()).toEqual([['a', 1990], ['b', 1990]]);
        expect(restored.keyCount()).toBe(2_000);
      });

      it('spreads a key group larger than the bound over consecutive chunks', () => {
        fill(300);
        const snapshot = backend.snapshot();
        const chunks = Array.from(snapshot.materializeChunks(1));
        snapshot.release();
        expect(chunks.every((chunk) => allEntries(chunk).length === 1 && (unbucketedCount(chunk) === 1 || chunk.keyGroups.length === 1))).toBe(true);
        expect(chunks.length).toBe(300 + 30 + 30);
      });

      it('yields nothing for an empty state, and sees no write made after the snapshot', () => {
        const empty = backend.snapshot();
        expect(Array.from(empty.materializeChunks(10))).toEqual([]);
        empty.release();
        fill(50);
        const snapshot = backend.snapshot();
        backend.setCurrentKey('late');
        backend.getState(valueState<number>('v')).update(1);
        const keys = Array.from(snapshot.materializeChunks(7)).flatMap((chunk) => allEntries(chunk).map((entry) => entry[1]));
        snapshot.release();
        expect(keys).not.toContain('late');
        expect(new Set(keys).size).toBe(50);
      });

      it('sees the state as of the snapshot while keys are written, removed and added back between its chunks', () => {
        const value = backend.getState(valueState<number>('v'));
        const set = (key: string, n: number | undefined) => {
          backend.setCurrentKey(key);
          if (n === undefined) value.clear();
          else value.update(n);
        };
        for (let i = 0; i < 40; i++) set(`k${i}`, i);
        // Written between the barrier and the first chunk, as a running job does.
        set('k0', 100);
        set('k1', undefined);
        set('new-before', 1);
        const snapshot = backend.snapshot();
        set('k2', 200);
        set('k3', undefined);
        set('k3', 300);
        const seen: unknown[][] = [];
        let round = 0;
        for (const chunk of snapshot.materializeChunks(5)) {
          seen.push(...allEntries(chunk).map((entry) => [entry[1], entry[2]]));
          // Between chunks: keys already read and keys still to come, removed, added back, changed, and new ones.
          round++;
          set(`k${(round * 7) % 40}`, undefined);
          set(`k${(round * 11) % 40}`, -round);
          set(`k${(round * 13) % 40}`, undefined);
          set(`k${(round * 13) % 40}`, -2 * round);
          set(`after-${round}`, round);
        }
        snapshot.release();
        const expected = [['k0', 100], ...Array.from({ length: 38 }, (_, i) => [`k${i + 2}`, i + 2]), ['new-before', 1]];
        const sort = (entries: unknown[][]) => entries.map((entry) => JSON.stringify(entry)).sort();
        expect(sort(seen)).toEqual(sort(expected));
      });

      it('sees values as of the snapshot while they are changed in place between its chunks', () => {
        const list = backend.getState(listState<number>('l'));
        const object = backend.getState(valueState<{ n: number }>('o'));
        for (let i = 0; i < 30; i++) {
          backend.setCurrentKey(`k${i}`);
          list.add(i);
          object.update({ n: i });
        }
        const snapshot = backend.snapshot();
        const restored = open();
        let round = 0;
        for (const chunk of snapshot.materializeChunks(4)) {
          restored.restore([throughJson(chunk)]);
          // Every key, read and changed in place (a list appended to, a value's field set) after each chunk.
          round++;
          for (let i = 0; i < 30; i++) {
            backend.setCurrentKey(`k${i}`);
            list.add(-round);
            const value = object.value()!;
            value.n = -round;
            if (round % 2 === 0) object.update(value);
          }
        }
        snapshot.release();
        expect(round).toBeGreaterThan(5);
        const restoredList = restored.getState(listState<number>('l'));
        const restoredObject = restored.getState(valueState<{ n: number }>('o'));
        for (let i = 0; i < 30; i++) {
          restored.setCurrentKey(`k${i}`);
          expect(restoredList.get()).toEqual([i]);
          expect(restoredObject.value()).toEqual({ n: i });
        }
      });

      it('sees values as of each of two snapshots while values are changed in place, the second taken while the first is read in chunks', () => {
        const object = backend.getState(valueState<{ n: number }>('o'));
        const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
        const setAll = (n: (i: number) => number) =>
          keys.forEach((key, i) => {
            backend.setCurrentKey(key);
            object.value()!.n = n(i);
          });
        keys.forEach((key, i) => {
          backend.setCurrentKey(key);
          object.update({ n: i });
        });
        const first = backend.snapshot();
        const firstRestored = open();
        const firstChunks = first.materializeChunks(4)[Symbol.iterator]();
        // The first snapshot is being read (it has taken the table's keys and values) when values change in place.
        firstRestored.restore([throughJson(firstChunks.next().value!)]);
        setAll((i) => 100 + i);
        const second = backend.snapshot();
        setAll((i) => 200 + i);
        for (let next = firstChunks.next(); !next.done; next = firstChunks.next()) {
          firstRestored.restore([throughJson(next.value)]);
          setAll((i) => 300 + i);
        }
        first.release();
        // Only the second is left, read in chunks while values change in place between them.
        const secondRestored = open();
        for (const chunk of second.materializeChunks(4)) {
          secondRestored.restore([throughJson(chunk)]);
          setAll((i) => 400 + i);
        }
        second.release();
        const read = (from: KeyedStateBackend) =>
          keys.map((key) => {
            from.setCurrentKey(key);
            return from.getState(valueState<{ n: number }>('o')).value()!.n;
          });
        expect(read(firstRestored)).toEqual(keys.map((_, i) => i));
        expect(read(secondRestored)).toEqual(keys.map((_, i) => 100 + i));
        expect(read(backend)).toEqual(keys.map((_, i) => 400 + i));
      });

      it('sees values as of the snapshot while aggregates change them in place and immutable or primitive values are replaced between its chunks', () => {
        const averages = backend.getState(aggregatingState('avg', mean));
        // A state whose values are only replaced through update, never changed in place, and says so.
        const replaced = backend.getState(valueState<{ n: number }>('replaced', { immutable: true }));
        const counts = backend.getState(valueState<number>('count'));
        for (let i = 0; i < 30; i++) {
          backend.setCurrentKey(`k${i}`);
          averages.add(i);
          replaced.update({ n: i });
          counts.update(i);
        }
        const snapshot = backend.snapshot();
        const restored = open();
        let round = 0;
        for (const chunk of snapshot.materializeChunks(4)) {
          restored.restore([throughJson(chunk)]);
          round++;
          for (let i = 0; i < 30; i++) {
            backend.setCurrentKey(`k${i}`);
            // `mean.add` changes the accumulator the snapshot still holds for the keys not yet read.
            averages.add(1000);
            replaced.update({ n: replaced.value()!.n - 100 });
            counts.update(counts.value()! - 100);
          }
        }
        snapshot.release();
        expect(round).toBeGreaterThan(5);
        const restoredAverages = restored.getState(aggregatingState('avg', mean));
        const restoredReplaced = restored.getState(valueState<{ n: number }>('replaced'));
        const restoredCounts = restored.getState(valueState<number>('count'));
        for (let i = 0; i < 30; i++) {
          restored.setCurrentKey(`k${i}`);
          expect(restoredAverages.get()).toBe(i);
          expect(restoredReplaced.value()).toEqual({ n: i });
          expect(restoredCounts.value()).toBe(i);
        }
        backend.setCurrentKey('k3');
        expect([averages.get(), replaced.value(), counts.value()]).toEqual([(3 + 1000 * round) / (round + 1), { n: 3 - 100 * round }, 3 - 100 * round]);
      });
    });
  });
}
