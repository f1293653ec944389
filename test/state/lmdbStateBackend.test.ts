import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_PARALLELISM,
  InvalidKeyError,
  collect,
  createJob,
  fromAsyncIterable,
  heapStateBackend,
  keyBy,
  mapState,
  memoryCheckpointStorage,
  process,
  valueState,
  type KeyedStatePayload,
  type StateBackend,
} from 'weir';
import { lmdbStateBackend } from 'weir/node';
import { describeKeyedStateBackend } from './keyedState.conformance';

const root = mkdtempSync(join(tmpdir(), 'weir-lmdb-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describeKeyedStateBackend('lmdb', () => lmdbStateBackend({ path: root }));

describe('lmdb state backend', () => {
  const options = { uid: 'op', maxParallelism: DEFAULT_MAX_PARALLELISM, keyGroupRange: { start: 0, end: DEFAULT_MAX_PARALLELISM - 1 } };

  it('creates a working directory per keyed backend under path and removes it on dispose', () => {
    const path = join(root, 'own');
    const first = lmdbStateBackend({ path }).createKeyedBackend(options);
    const backend = lmdbStateBackend({ path });
    const second = backend.createKeyedBackend(options);
    const third = backend.createKeyedBackend(options);
    const dirs = readdirSync(path);
    expect(dirs).toHaveLength(3);
    expect(dirs.every((dir) => dir.startsWith('weir-lmdb-'))).toBe(true);

    first.setCurrentKey('a');
    first.getState(valueState<number>('v')).update(1);
    second.setCurrentKey('a');
    expect(second.getState(valueState<number>('v')).value()).toBeUndefined();

    first.dispose();
    second.dispose();
    expect(readdirSync(path)).toHaveLength(1);
    third.dispose();
    expect(readdirSync(path)).toEqual([]);
  });

  it('uses the system temp directory by default', () => {
    const backend = lmdbStateBackend().createKeyedBackend(options);
    const before = readdirSync(tmpdir()).filter((dir) => dir.startsWith('weir-lmdb-') && !dir.startsWith('weir-lmdb-test-'));
    expect(before.length).toBeGreaterThan(0);
    backend.dispose();
    const after = readdirSync(tmpdir()).filter((dir) => dir.startsWith('weir-lmdb-') && !dir.startsWith('weir-lmdb-test-'));
    expect(after.length).toBe(before.length - 1);
  });

  it('rejects bad options when it is created', () => {
    expect(() => lmdbStateBackend({ path: '' })).toThrow(/path/);
    expect(() => lmdbStateBackend({ mapSize: -1 })).toThrow(/mapSize/);
    expect(() => lmdbStateBackend({ writeBatch: 0 })).toThrow(/writeBatch/);
  });

  it('writes nothing of a putAll whose map key it cannot store (one transaction)', () => {
    const backend = lmdbStateBackend({ path: root }).createKeyedBackend(options);
    const state = backend.getState(mapState<unknown, number>('m'));
    backend.setCurrentKey('a');
    state.put('x', 1);
    expect(() => state.putAll([['y', 2], [{ not: 'a key' }, 3]])).toThrow(InvalidKeyError);
    expect(state.entries()).toEqual([['x', 1]]);
    state.putAll([['y', 2], ['z', 3]]);
    expect(state.entries()).toEqual([['x', 1], ['y', 2], ['z', 3]]);
    backend.dispose();
  });

  it('keeps state past its write buffer and reads it back after snapshots', () => {
    const backend = lmdbStateBackend({ path: root, writeBatch: 16_384 }).createKeyedBackend(options);
    const state = backend.getState(valueState<number>('n'));
    for (let i = 0; i < 100_000; i++) {
      backend.setCurrentKey(i % 50_000);
      state.update((state.value() ?? 0) + 1);
    }
    const snapshot = backend.snapshot();
    backend.setCurrentKey(0);
    state.update(100);
    const payload = snapshot.materialize();
    snapshot.release();
    const entries = payload.keyGroups.flatMap(([, group]) => group);
    expect(entries).toHaveLength(50_000);
    expect(entries.every(([, , value]) => value === 2)).toBe(true);
    expect(payload.keyGroups.map(([group]) => group)).toEqual([...payload.keyGroups.map(([group]) => group)].sort((a, b) => a - b));
    expect(state.value()).toBe(100);
    expect(backend.keyCount()).toBe(50_000);
    backend.dispose();
    expect(existsSync(join(root, 'own'))).toBe(true);
  });

  it('snapshots hold the writes LMDB has not committed yet, and none made after them, whenever LMDB commits', async () => {
    // Small batches: many flushes, each written and committed by LMDB's write thread whenever it gets to it.
    const backend = lmdbStateBackend({ path: root, writeBatch: 500 }).createKeyedBackend({ ...options, trackChanges: true });
    const state = backend.getState(valueState<{ n: number }>('n'));
    const turns = async () => {
      for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    };
    const KEYS = 5_000;
    for (let i = 0; i < KEYS; i++) {
      backend.setCurrentKey(i);
      state.update({ n: i });
    }
    await turns();
    for (let i = 0; i < KEYS; i += 5) {
      backend.setCurrentKey(i);
      state.clear();
    }
    const full = backend.snapshot();
    await turns();
    // After the barrier: values changed in place (then written back), deleted keys written again.
    for (let i = 0; i < KEYS; i++) {
      backend.setCurrentKey(i);
      const value = state.value();
      if (value === undefined) state.update({ n: -i - 1 });
      else {
        value.n += 1_000_000;
        state.update(value);
      }
    }
    await turns();
    const values = (payload: KeyedStatePayload) => new Map(payload.keyGroups.flatMap(([, group]) => group.map(([, key, value]) => [key, value])));
    const fullPayload = full.materialize();
    full.release();
    const expectedFull = new Map(Array.from({ length: KEYS }, (_, i) => i).filter((i) => i % 5 !== 0).map((i) => [i, { n: i }]));
    expect(values(fullPayload)).toEqual(expectedFull);

    const delta = backend.snapshot();
    await turns();
    for (let i = 0; i < KEYS; i += 7) {
      backend.setCurrentKey(i);
      state.clear();
    }
    const deltaPayloads = Array.from(delta.materializeChangeChunks!(1_000));
    expect(new Map(deltaPayloads.flatMap((payload) => [...values(payload)]))).toEqual(
      new Map(Array.from({ length: KEYS }, (_, i) => [i, { n: i % 5 === 0 ? -i - 1 : i + 1_000_000 }])),
    );
    expect(deltaPayloads.flatMap((payload) => payload.removed ?? [])).toEqual([]);

    expect(backend.keyCount()).toBe(KEYS - Math.ceil(KEYS / 7));
    expect(new Set(backend.keysOf(valueState<{ n: number }>('n')))).toEqual(new Set(Array.from({ length: KEYS }, (_, i) => i).filter((i) => i % 7 !== 0)));
    await turns();
    const restored = lmdbStateBackend({ path: root }).createKeyedBackend(options);
    restored.restore([fullPayload, ...deltaPayloads]);
    const restoredState = restored.getState(valueState<{ n: number }>('n'));
    for (let i = 0; i < KEYS; i++) {
      backend.setCurrentKey(i);
      restored.setCurrentKey(i);
      expect(restoredState.value(), `key ${i}`).toEqual({ n: i % 5 === 0 ? -i - 1 : i + 1_000_000 });
      expect(state.value(), `key ${i}`).toEqual(i % 7 === 0 ? undefined : { n: i % 5 === 0 ? -i - 1 : i + 1_000_000 });
    }
    restored.dispose();
    backend.dispose();
  });
});

describe('a job on the lmdb state backend', () => {
  interface Event {
    key: string;
    n: number;
  }
  const events: Event[] = Array.from({ length: 400 }, (_, n) => ({ key: `k${(n * 7) % 23}`, n }));
  const PAUSE = 200;
  const total = valueState<number>('total', { default: 0 });

  /** Events in order, stopping before index PAUSE until released (a restored run resumes past it). */
  function pausable() {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const arrived = new Promise<void>((resolve) => (reached = resolve));
    const source = fromAsyncIterable<Event>({
      async *[Symbol.asyncIterator]() {
        for (let i = 0; i < events.length; i++) {
          if (i === PAUSE) {
            reached();
            await gate;
          }
          yield events[i]!;
        }
      },
    });
    return { source, arrived, release };
  }

  /** Running totals per key, with a process function over value state: one output per event. */
  function totalsJob(stateBackend: StateBackend, storage: ReturnType<typeof memoryCheckpointStorage>, source: ReturnType<typeof pausable>['source']) {
    const out = collect<[string, number]>();
    const job = createJob({ name: 'totals', stateBackend, checkpoints: { storage, retain: 5 }, chunkSize: 10 });
    job.source(source, { uid: 'in' }).pipe(
      keyBy((e) => e.key),
      process<Event, [string, number]>(
        {
          onElement(e, ctx, emit) {
            const state = ctx.state(total);
            state.update(state.value()! + e.n);
            emit.emit([e.key, state.value()!]);
          },
        },
        { uid: 'totals' },
      ),
      out.sink({ uid: 'out' }),
    );
    return { job, out };
  }

  const expected = (() => {
    const sums = new Map<string, number>();
    return events.map(({ key, n }): [string, number] => {
      sums.set(key, (sums.get(key) ?? 0) + n);
      return [key, sums.get(key)!];
    });
  })();

  it.each([
    ['lmdb', 'heap', () => lmdbStateBackend({ path: root }), () => heapStateBackend()],
    ['heap', 'lmdb', () => heapStateBackend(), () => lmdbStateBackend({ path: root })],
    ['lmdb', 'lmdb', () => lmdbStateBackend({ path: root }), () => lmdbStateBackend({ path: root })],
    // Every few records a flush, committed by LMDB's write thread while the job runs and checkpoints.
    ['lmdb (write batches of 4)', 'lmdb', () => lmdbStateBackend({ path: root, writeBatch: 4 }), () => lmdbStateBackend({ path: root, writeBatch: 4 })],
  ])('checkpoints on %s and restores on %s with the same results', async (_from, _to, first, second) => {
    const storage = memoryCheckpointStorage();
    const paused = pausable();
    const run = totalsJob(first(), storage, paused.source);
    const running = run.job.start();
    await paused.arrived;
    const checkpoint = await running.checkpoint();
    paused.release();
    await running.done;
    expect(run.out.values).toEqual(expected);

    const resumed = pausable();
    resumed.release();
    const again = totalsJob(second(), storage, resumed.source);
    await again.job.start({ restore: checkpoint.path }).done;
    expect(again.out.values).toEqual(expected.slice(PAUSE));
    expect(readdirSync(root).filter((dir) => dir.startsWith('weir-lmdb-'))).toEqual([]);
  });
});
