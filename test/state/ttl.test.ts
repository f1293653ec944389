import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { allEntries } from '../support/payloadEntries';
import {
  DEFAULT_MAX_PARALLELISM,
  StateDescriptorConflictError,
  StateMigrationError,
  aggregatingState,
  heapStateBackend,
  keyBy,
  listState,
  mapState,
  process,
  reducingState,
  valueState,
  type KeyedStateBackend,
  type KeyedStatePayload,
  type StateBackend,
  type StateTtlConfig,
} from 'weir';
import { lmdbStateBackend } from 'weir/node';
import { harness } from 'weir/testing';

const root = mkdtempSync(join(tmpdir(), 'weir-ttl-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const backends: [string, () => StateBackend][] = [
  ['heap', () => heapStateBackend()],
  ['lmdb', () => lmdbStateBackend({ path: root })],
];

const throughJson = (payload: KeyedStatePayload): KeyedStatePayload => JSON.parse(JSON.stringify(payload)) as KeyedStatePayload;

describe.each(backends)('state TTL on the %s backend', (_name, create) => {
  /** The virtual clock every backend of a test reads. */
  const clock = { now: 0, watermark: Number.NEGATIVE_INFINITY };
  const opened: KeyedStateBackend[] = [];
  const open = (uid = 'op'): KeyedStateBackend => {
    const backend = create().createKeyedBackend({
      uid,
      maxParallelism: DEFAULT_MAX_PARALLELISM,
      keyGroupRange: { start: 0, end: DEFAULT_MAX_PARALLELISM - 1 },
      clock: { processingTime: () => clock.now, eventTime: () => clock.watermark },
    });
    opened.push(backend);
    return backend;
  };
  const roundTrip = (backend: KeyedStateBackend): KeyedStateBackend => {
    const snapshot = backend.snapshot();
    const payload = throughJson(snapshot.materialize());
    snapshot.release();
    const restored = open();
    restored.restore([payload]);
    return restored;
  };
  afterEach(() => {
    opened.splice(0).forEach((backend) => backend.dispose());
    clock.now = 0;
    clock.watermark = Number.NEGATIVE_INFINITY;
  });
  const ttl = (config: Partial<StateTtlConfig> = {}): StateTtlConfig => ({ ttl: 10, ...config });

  it('expires a value state as a whole once lastAccess + ttl <= now, and falls back to the default', () => {
    const backend = open();
    const state = backend.getState(valueState<number>('v', { default: -1, ttl: ttl() }));
    backend.setCurrentKey('a');
    state.update(1);
    clock.now = 9;
    expect(state.value()).toBe(1);
    clock.now = 10;
    expect(state.value()).toBe(-1);
    expect(backend.peek(valueState<number>('v', { default: -1, ttl: ttl() }), 'a')).toBeUndefined();
  });

  it('expires reducing and aggregating state as a whole; an expired value takes no part in the next add', () => {
    const backend = open();
    const sum = backend.getState(reducingState<number>('sum', (a, b) => a + b, { ttl: ttl() }));
    const avg = backend.getState(
      aggregatingState('avg', { createAccumulator: () => ({ s: 0, n: 0 }), add: (v: number, acc) => ({ s: acc.s + v, n: acc.n + 1 }), getResult: (acc) => acc.s / acc.n, merge: (a, b) => ({ s: a.s + b.s, n: a.n + b.n }) }, { ttl: ttl() }),
    );
    backend.setCurrentKey('a');
    sum.add(1);
    avg.add(2);
    clock.now = 5;
    sum.add(2);
    avg.add(4);
    clock.now = 14;
    expect(sum.get()).toBe(3);
    expect(avg.get()).toBe(3);
    clock.now = 15;
    expect(sum.get()).toBeUndefined();
    expect(avg.get()).toBeUndefined();
    sum.add(2);
    avg.add(2);
    clock.now = 20;
    sum.add(7);
    avg.add(4);
    expect(sum.get()).toBe(9);
    expect(avg.get()).toBe(3);
    clock.now = 40;
    sum.add(5);
    avg.add(8);
    expect(sum.get()).toBe(5);
    expect(avg.get()).toBe(8);
  });

  it('expires list elements and map entries one by one', () => {
    const backend = open();
    const list = backend.getState(listState<string>('l', { ttl: ttl() }));
    const map = backend.getState(mapState<string, number>('m', { ttl: ttl() }));
    backend.setCurrentKey('a');
    list.add('x');
    map.put('x', 1);
    clock.now = 5;
    list.add('y');
    map.put('y', 2);
    clock.now = 10;
    expect(list.get()).toEqual(['y']);
    expect(map.get('x')).toBeUndefined();
    expect(map.contains('y')).toBe(true);
    expect(map.entries()).toEqual([['y', 2]]);
    clock.now = 15;
    expect(list.get()).toEqual([]);
    expect(map.isEmpty()).toBe(true);
    expect(backend.peek(listState<string>('l', { ttl: ttl() }), 'a')).toBeUndefined();
  });

  it("restarts the clock on writes only by default, and on reads too with 'on-read-and-write'", () => {
    const backend = open();
    const onWrite = backend.getState(valueState<number>('w', { ttl: ttl() }));
    const onRead = backend.getState(valueState<number>('r', { ttl: ttl({ update: 'on-read-and-write' }) }));
    const readList = backend.getState(listState<number>('rl', { ttl: ttl({ update: 'on-read-and-write' }) }));
    const readMap = backend.getState(mapState<string, number>('rm', { ttl: ttl({ update: 'on-read-and-write' }) }));
    backend.setCurrentKey('a');
    onWrite.update(1);
    onRead.update(1);
    readList.add(1);
    readMap.put('k', 1);
    for (const time of [8, 16]) {
      clock.now = time;
      expect(onRead.value()).toBe(1);
      expect(readList.get()).toEqual([1]);
      expect(readMap.get('k')).toBe(1);
    }
    expect(onWrite.value()).toBeUndefined();
    clock.now = 25;
    expect(onRead.value()).toBe(1);
    clock.now = 35;
    expect(onRead.value()).toBeUndefined();
    expect(readList.get()).toEqual([]);
    expect(readMap.get('k')).toBeUndefined();
  });

  it("returns an expired value once with 'return-expired-if-not-cleaned-up', then it is gone", () => {
    const backend = open();
    const value = backend.getState(valueState<number>('v', { ttl: ttl({ visibility: 'return-expired-if-not-cleaned-up' }) }));
    const list = backend.getState(listState<number>('l', { ttl: ttl({ visibility: 'return-expired-if-not-cleaned-up' }) }));
    const map = backend.getState(mapState<string, number>('m', { ttl: ttl({ visibility: 'return-expired-if-not-cleaned-up' }) }));
    backend.setCurrentKey('a');
    value.update(1);
    list.add(1);
    map.put('k', 1);
    clock.now = 10;
    expect(value.value()).toBe(1);
    expect(value.value()).toBeUndefined();
    expect(list.get()).toEqual([1]);
    expect(list.get()).toEqual([]);
    expect(map.get('k')).toBe(1);
    expect(map.get('k')).toBeUndefined();
  });

  it('keeps TTL timestamps through a snapshot and restore', () => {
    const backend = open();
    const descriptor = () => listState<number>('l', { ttl: ttl() });
    backend.getState(descriptor());
    backend.setCurrentKey('a');
    backend.getState(descriptor()).add(1);
    clock.now = 6;
    backend.getState(descriptor()).add(2);
    const restored = roundTrip(backend);
    restored.setCurrentKey('a');
    const list = restored.getState(descriptor());
    clock.now = 10;
    expect(list.get()).toEqual([2]);
    clock.now = 16;
    expect(list.get()).toEqual([]);
  });

  it('leaves expired values out of full snapshots with cleanup.fullSnapshot', () => {
    const backend = open();
    const value = backend.getState(valueState<number>('v', { ttl: ttl({ cleanup: { fullSnapshot: true } }) }));
    const list = backend.getState(listState<number>('l', { ttl: ttl({ cleanup: { fullSnapshot: true } }) }));
    for (const [key, at] of [['old', 0], ['new', 5]] as const) {
      clock.now = at;
      backend.setCurrentKey(key);
      value.update(1);
      list.add(at);
      backend.setCurrentKey('mixed');
      list.add(at);
    }
    clock.now = 12;
    const snapshot = backend.snapshot();
    const payload = snapshot.materialize();
    snapshot.release();
    const entries = allEntries(payload).map(([state, key]) => `${payload.states[state]!.name}:${String(key)}`);
    expect(entries.sort()).toEqual(['l:mixed', 'l:new', 'v:new']);
    const restored = open();
    restored.restore([throughJson(payload)]);
    restored.setCurrentKey('mixed');
    clock.now = 0;
    expect(restored.getState(listState<number>('l', { ttl: ttl({ cleanup: { fullSnapshot: true } }) })).get()).toEqual([5]);
  });

  it('checks n more keys on each access with cleanup.incremental', () => {
    const backend = open();
    const descriptor = valueState<number>('v', { ttl: ttl({ cleanup: { incremental: 2 } }) });
    const state = backend.getState(descriptor);
    for (const key of ['a', 'b', 'c', 'd']) {
      backend.setCurrentKey(key);
      state.update(1);
    }
    clock.now = 10;
    backend.setCurrentKey('x');
    expect(state.value()).toBeUndefined();
    expect(state.value()).toBeUndefined();
    expect(state.value()).toBeUndefined();
    expect(Array.from(backend.keysOf(descriptor))).toEqual([]);
    expect(backend.getCurrentKey()).toBe('x');
  });

  it('expires by the watermark with event-time TTL', () => {
    const backend = open();
    const state = backend.getState(valueState<number>('v', { ttl: ttl({ timeCharacteristic: 'event-time' }) }));
    backend.setCurrentKey('a');
    clock.watermark = 100;
    state.update(1);
    clock.now = 1_000_000;
    expect(state.value()).toBe(1);
    clock.watermark = 110;
    expect(state.value()).toBeUndefined();
  });

  it('does not overflow with a huge ttl', () => {
    const backend = open();
    const state = backend.getState(valueState<number>('v', { ttl: { ttl: Number.MAX_SAFE_INTEGER } }));
    const huge = backend.getState(valueState<number>('h', { ttl: { ttl: Number.MAX_VALUE } }));
    backend.setCurrentKey('a');
    clock.now = 1_000;
    state.update(1);
    huge.update(1);
    clock.now = Number.MAX_SAFE_INTEGER - 1;
    expect(state.value()).toBe(1);
    expect(huge.value()).toBe(1);
  });

  it('fails with StateMigrationError naming uid and state when TTL is switched on or off for saved state', () => {
    const withTtl = open();
    withTtl.getState(valueState<number>('v', { ttl: ttl() }));
    withTtl.setCurrentKey('a');
    withTtl.getState(valueState<number>('v', { ttl: ttl() })).update(1);
    const off = roundTrip(withTtl);
    expect(() => off.getState(valueState<number>('v'))).toThrow(StateMigrationError);
    expect(() => off.getState(valueState<number>('v'))).toThrow(/operator 'op': state 'v' was saved with a TTL but is now read without a TTL/);

    const plain = open();
    plain.setCurrentKey('a');
    plain.getState(valueState<number>('v')).update(1);
    const on = roundTrip(plain);
    expect(() => on.getState(valueState<number>('v', { ttl: ttl() }))).toThrow(/state 'v' was saved without a TTL but is now read with a TTL/);
  });

  it('rejects registering one state with and without TTL, or with two TTLs', () => {
    const backend = open();
    backend.getState(valueState<number>('v', { ttl: ttl() }));
    expect(() => backend.getState(valueState<number>('v'))).toThrow(StateDescriptorConflictError);
    expect(() => backend.getState(valueState<number>('v', { ttl: ttl({ ttl: 20 }) }))).toThrow(StateDescriptorConflictError);
  });
});

describe('state TTL in a job', () => {
  it.each(backends)('reads the job clock for processing-time TTL, and restores timestamps from a checkpoint (%s)', async (_name, create) => {
    const last = valueState<number>('last', { ttl: { ttl: 1_000 } });
    const fragment = (input: import('weir').Flow<[string, number]>) =>
      input.pipe(
        keyBy(([key]: [string, number]) => key),
        process<[string, number], string>(
          {
            onElement([key, value], ctx, out) {
              out.emit(`${key}:${String(ctx.state(last).value())}`);
              ctx.state(last).update(value);
            },
          },
          { uid: 'last' },
        ),
      );
    const h = await harness(fragment, { stateBackend: create(), timestamped: false });
    h.push(['a', 1]);
    h.setProcessingTime(900);
    h.push(['a', 2]);
    h.setProcessingTime(1_500);
    h.push(['a', 3]);
    expect(h.state('last', last, 'a')).toBe(3);
    const snapshot = await h.snapshot();
    h.close();
    const restored = await harness(fragment, { stateBackend: create(), timestamped: false, restore: snapshot, startTime: 2_400 });
    restored.push(['a', 4]);
    restored.setProcessingTime(3_400);
    restored.push(['a', 5]);
    expect([...h.values(), ...restored.values()]).toEqual(['a:undefined', 'a:1', 'a:2', 'a:3', 'a:undefined']);
    restored.close();
  });

  it.each(backends)('advances event-time TTL with the watermarks reaching the operator (%s)', async (_name, create) => {
    const seen = listState<number>('seen', { ttl: { ttl: 100, timeCharacteristic: 'event-time' } });
    const h = await harness(
      (input) =>
        input.pipe(
          keyBy((n: number) => n % 2),
          process<number, number[]>(
            {
              onElement(n, ctx, out) {
                ctx.state(seen).add(n);
                out.emit(ctx.state(seen).get());
              },
            },
            { uid: 'seen' },
          ),
        ),
      { stateBackend: create() },
    );
    // Before the first watermark, a write is stamped with its record's timestamp; after, with the watermark.
    h.push(2, 10);
    h.pushWatermark(50);
    h.push(4, 60);
    h.pushWatermark(109);
    h.push(6, 110);
    h.pushWatermark(110);
    h.push(8, 120);
    h.pushWatermark(160);
    h.push(10, 170);
    expect(h.values()).toEqual([[2], [2, 4], [2, 4, 6], [4, 6, 8], [6, 8, 10]]);
    h.close();
  });
});
