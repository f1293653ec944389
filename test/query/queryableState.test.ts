import { describe, expect, it, vi } from 'vitest';
import {
  CheckpointNotFoundError,
  InvalidQueryError,
  JobDefinitionError,
  QueryableStateConflictError,
  QueryableStateUnavailableError,
  UnknownQueryableStateError,
  coProcess,
  collect,
  connect,
  createJob,
  fromArray,
  keyBy,
  memoryCheckpointStorage,
  process,
  valueState,
  type Key,
  type ProcessContext,
  type RunningJob,
} from 'weir';
import { pausableSource } from '../checkpoint/fixtures';
import { expectedAfter, visits, visitsJob } from './fixtures';

const CHUNK = 10;

/** Starts the visits job paused before `pauseAt`; resolves once the first pause point is reached and checkpointed. */
async function startPaused(pauseAt: number[]) {
  const paused = pausableSource(visits, pauseAt);
  const storage = memoryCheckpointStorage();
  const { job, out } = visitsJob(paused.source, { storage, chunkSize: CHUNK });
  const running = job.start();
  await paused.reached(pauseAt[0]!);
  const first = await running.checkpoint();
  return { running, paused, out, first, storage };
}

async function allKeys(running: RunningJob, name: string, options: { prefix?: string; limit: number; asOf?: number }): Promise<Key[]> {
  const keys: Key[] = [];
  let cursor: string | undefined;
  do {
    const page = await running.queryKeys(name, { ...options, cursor });
    expect(page.keys.length).toBeLessThanOrEqual(options.limit);
    keys.push(...page.keys);
    cursor = page.cursor;
  } while (cursor !== undefined);
  return keys;
}

describe('queryable state in process', () => {
  it('reads the live value of a key between records, as a copy; undefined for a missing key', async () => {
    const { running, paused } = await startPaused([20]);
    const expected = expectedAfter(20, 'user-03')!;
    expect(await running.query('visit-count', 'user-03')).toBe(expected.count);
    expect(await running.query('avg-ms', 'user-03')).toBe(expected.avgMs);
    const pagesSeen = await running.query<Map<string, Date>>('last-visit-per-page', 'user-03');
    expect(pagesSeen).toEqual(expected.pages);
    // A copy: changing it does not reach the job's state.
    pagesSeen!.clear();
    expect(await running.query('last-visit-per-page', 'user-03')).toEqual(expected.pages);
    // A value state with a default still answers undefined for a key that holds nothing.
    expect(await running.query('visit-count', 'nobody')).toBeUndefined();
    expect(running.queryableStates().map((s) => s.name).sort()).toEqual(['avg-ms', 'last-visit-per-page', 'visit-count']);
    paused.releaseAll();
    await running.done;
  });

  it('follows the job as it processes records', async () => {
    const { running, paused } = await startPaused([20, 40]);
    paused.release(20);
    await paused.reached(40);
    await running.checkpoint();
    expect(await running.query('visit-count', 'user-03')).toBe(expectedAfter(40, 'user-03')!.count);
    paused.releaseAll();
    await running.done;
  });

  it('lists keys in key order with prefix, range and pagination', async () => {
    const { running, paused } = await startPaused([50]);
    const users = Array.from({ length: 10 }, (_, i) => `user-${String(i).padStart(2, '0')}`);
    const everyone = ['admin-0', 'admin-1', ...users];
    expect((await running.queryKeys('visit-count')).keys).toEqual(everyone);
    expect(await allKeys(running, 'visit-count', { limit: 3 })).toEqual(everyone);
    expect(await allKeys(running, 'visit-count', { prefix: 'user-', limit: 4 })).toEqual(users);
    expect((await running.queryKeys('visit-count', { from: 'user-02', to: 'user-05' })).keys).toEqual(['user-02', 'user-03', 'user-04']);
    const first = await running.queryKeys('visit-count', { limit: 12 });
    expect(first.cursor).toBeUndefined();
    expect((await running.queryKeys('visit-count', { prefix: 'nobody-' })).keys).toEqual([]);
    paused.releaseAll();
    await running.done;
  });

  it('rejects bad names, keys and paging parameters with typed errors', async () => {
    const { running, paused } = await startPaused([20]);
    await expect(running.query('no-such-state', 'user-01')).rejects.toThrow(UnknownQueryableStateError);
    await expect(running.query('no-such-state', 'user-01')).rejects.toThrow(/visit-count/);
    await expect(running.queryKeys('no-such-state')).rejects.toThrow(UnknownQueryableStateError);
    await expect(running.query('visit-count', { id: 1 } as never)).rejects.toThrow(InvalidQueryError);
    await expect(running.queryKeys('visit-count', { limit: 0 })).rejects.toThrow(InvalidQueryError);
    await expect(running.queryKeys('visit-count', { limit: 1.5 })).rejects.toThrow(/limit/);
    await expect(running.queryKeys('visit-count', { cursor: '%%%' })).rejects.toThrow(/cursor/);
    await expect(running.query('visit-count', 'user-01', { asOf: -1 })).rejects.toThrow(InvalidQueryError);
    paused.releaseAll();
    await running.done;
  });

  it('reads a retained checkpoint with asOf, during and after the run', async () => {
    const { running, paused, first } = await startPaused([20, 40]);
    paused.release(20);
    await paused.reached(40);
    const second = await running.checkpoint();
    const at20 = expectedAfter(20, 'user-05')!;
    const at40 = expectedAfter(40, 'user-05')!;
    expect(await running.query('visit-count', 'user-05', { asOf: first.id })).toBe(at20.count);
    expect(await running.query('visit-count', 'user-05', { asOf: second.id })).toBe(at40.count);
    expect(await running.query('visit-count', 'user-05')).toBe(at40.count);
    expect(await running.query('last-visit-per-page', 'user-05', { asOf: first.id })).toEqual(at20.pages);
    expect(await running.query('avg-ms', 'user-05', { asOf: first.id })).toBe(at20.avgMs);
    expect(await running.query('visit-count', 'nobody', { asOf: first.id })).toBeUndefined();
    expect((await running.queryKeys('visit-count', { asOf: first.id, prefix: 'admin-' })).keys).toEqual(['admin-0', 'admin-1']);
    await expect(running.query('visit-count', 'user-05', { asOf: 999 })).rejects.toThrow(CheckpointNotFoundError);
    paused.releaseAll();
    await running.done;

    // Once the job has ended, its live state is gone but retained checkpoints still answer.
    await expect(running.query('visit-count', 'user-05')).rejects.toThrow(QueryableStateUnavailableError);
    expect(await running.query('visit-count', 'user-05', { asOf: second.id })).toBe(at40.count);
  });

  it('asOf on a job without checkpointing is a job definition error', async () => {
    const paused = pausableSource(visits, [20]);
    const { job } = visitsJob(paused.source, { chunkSize: CHUNK });
    const running = job.start();
    await paused.reached(20);
    await vi.waitFor(async () => expect(await running.query('visit-count', 'user-01')).toBeDefined(), { timeout: 30_000, interval: 10 });
    await expect(running.query('visit-count', 'user-01', { asOf: 1 })).rejects.toThrow(JobDefinitionError);
    paused.releaseAll();
    await running.done;
  });

  it('fails the job when two states share a queryable name', async () => {
    const job = createJob({ name: 'conflict' });
    const a = valueState<number>('a', { queryable: 'same' });
    const b = valueState<number>('b', { queryable: 'same' });
    job.source(fromArray([1, 2, 3]), { uid: 'n' }).pipe(
      keyBy((n: number) => n % 2),
      process<number, number>({
        onElement(n, ctx) {
          ctx.state(a).update(n);
          ctx.state(b).update(n);
        },
      }),
      collect<number>().sink(),
    );
    const done = job.start().done;
    await expect(done).rejects.toThrow(QueryableStateConflictError);
    await expect(done).rejects.toThrow(JobDefinitionError);
    await expect(done).rejects.toThrow(/'same'.*'a'.*'b'/);
  });

  it('answers from the start for states the operator lists in states: undefined before the first record', async () => {
    const paused = pausableSource(visits, [0]);
    const { job } = visitsJob(paused.source, { chunkSize: CHUNK, declareStates: true });
    const running = job.start();
    // Asked before the job is up: the query waits for it, then finds the state empty.
    expect(await running.query('visit-count', 'user-00')).toBeUndefined();
    expect(await running.query('avg-ms', 'user-00')).toBeUndefined();
    expect(await running.query('last-visit-per-page', 'user-00')).toBeUndefined();
    expect((await running.queryKeys('visit-count')).keys).toEqual([]);
    expect(running.queryableStates().map((s) => s.name).sort()).toEqual(['avg-ms', 'last-visit-per-page', 'visit-count']);
    await expect(running.query('no-such-state', 'user-00')).rejects.toThrow(UnknownQueryableStateError);
    paused.releaseAll();
    await running.done;
  });

  it('knows a state not listed in states only once its operator uses it, and says how to list it', async () => {
    const paused = pausableSource(visits, [0]);
    const { job } = visitsJob(paused.source, { chunkSize: CHUNK });
    const running = job.start();
    await expect(running.query('visit-count', 'user-00')).rejects.toThrow(UnknownQueryableStateError);
    await expect(running.query('visit-count', 'user-00')).rejects.toThrow(/states: \[descriptor\]/);
    paused.releaseAll();
    await running.done;
  });

  it('answers with the restored values of listed states before the operator runs again', async () => {
    const { running, paused, first, storage } = await startPaused([20]);
    paused.releaseAll();
    await running.done;

    // Restored from the checkpoint after 20 visits, the source stops before visit 20: no record reaches the operator.
    const again = pausableSource(visits, [20]);
    const { job } = visitsJob(again.source, { storage, chunkSize: CHUNK, declareStates: true });
    const restored = job.start({ restore: first.path });
    await again.reached(20);
    const expected = expectedAfter(20, 'user-03')!;
    expect(await restored.query('visit-count', 'user-03')).toBe(expected.count);
    expect(await restored.query('avg-ms', 'user-03')).toBe(expected.avgMs);
    expect(await restored.query('last-visit-per-page', 'user-03')).toEqual(expected.pages);
    expect(await restored.query('visit-count', 'nobody')).toBeUndefined();
    expect((await restored.queryKeys('visit-count', { prefix: 'admin-' })).keys).toEqual(['admin-0', 'admin-1']);
    await expect(restored.query('no-such-state', 'user-03')).rejects.toThrow(UnknownQueryableStateError);
    again.releaseAll();
    await restored.done;
  });

  it('reads every parallel instance of a keyed operator', async () => {
    const paused = pausableSource(visits, [20]);
    const { job } = visitsJob(paused.source, { chunkSize: CHUNK, parallelism: 4, declareStates: true });
    const running = job.start();
    await paused.reached(20);
    await vi.waitFor(async () => expect((await running.queryKeys('visit-count')).keys).toHaveLength(12), { timeout: 30_000, interval: 10 });
    for (const user of ['user-00', 'user-05', 'user-09', 'admin-1']) {
      expect(await running.query('visit-count', user)).toBe(expectedAfter(20, user)!.count);
    }
    paused.releaseAll();
    await running.done;
  });

  it('answers from the start for states a coProcess lists', async () => {
    const seen = valueState<boolean>('seen', { queryable: 'seen' });
    const paused = pausableSource(['a', 'b'], [0]);
    const job = createJob({ name: 'co' });
    const controls = job.source(fromArray<string>([]), { uid: 'controls' }).pipe(keyBy((c: string) => c));
    const words = job.source(paused.source, { uid: 'words' }).pipe(keyBy((w: string) => w));
    const mark = (_value: string, ctx: ProcessContext) => ctx.state(seen).update(true);
    connect(controls, words).pipe(
      coProcess<string, string, string>({ onElement1: mark, onElement2: mark }, { uid: 'co', states: [seen] }),
      collect<string>().sink(),
    );
    const running = job.start();
    expect(await running.query('seen', 'a')).toBeUndefined();
    paused.releaseAll();
    await running.done;
  });

  it('rejects states on a process function without keyed state', () => {
    const job = createJob({ name: 'not-keyed' });
    const flow = job.source(fromArray([1, 2, 3]), { uid: 'n' });
    const onElement = () => undefined;
    expect(() => flow.pipe(process<number, number>({ onElement }, { states: [valueState<number>('a')] }))).toThrow(JobDefinitionError);
    expect(() => flow.pipe(process<number, number>({ onElement }, { states: ['a'] as never }))).toThrow(JobDefinitionError);
  });

  it('waits while the job restarts, then answers from the restored attempt', async () => {
    const paused = pausableSource(visits, [20, 40]);
    let failed = false;
    const { job } = visitsJob(paused.source, {
      storage: memoryCheckpointStorage(),
      chunkSize: CHUNK,
      restart: { strategy: 'fixed-delay', attempts: 1, delay: 100 },
      onWarning: () => undefined,
      fail: (v) => v.ms === 30 && !failed && (failed = true),
    });
    const running = job.start();
    await paused.reached(20);
    await running.checkpoint();
    paused.release(20);
    await vi.waitFor(() => expect(failed).toBe(true), { timeout: 30_000, interval: 10 });
    let answered = false;
    const answer = running.query<number>('visit-count', 'user-00').then((value) => ((answered = true), value));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(answered).toBe(false);
    // The restored attempt replays visits 20…39 and stops at 40: user-00 has between 2 (restored) and 4 visits.
    const value = await answer;
    expect(value).toBeGreaterThanOrEqual(expectedAfter(20, 'user-00')!.count);
    expect(value).toBeLessThanOrEqual(expectedAfter(40, 'user-00')!.count);
    await paused.reached(40);
    await running.checkpoint();
    expect(await running.query('visit-count', 'user-00')).toBe(expectedAfter(40, 'user-00')!.count);
    paused.releaseAll();
    expect((await running.done).restarts).toBe(1);
  });
});
