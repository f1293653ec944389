import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collect, createJob, fromArray, keyBy, listState, process, StateMigrationError, valueState, type Key, type StateBackend, type StateDescriptor } from 'weir';
import { fsCheckpointStorage, lmdbStateBackend } from 'weir/node';
import { pausableSource, tempDir } from '../support/savepointFixtures';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir('weir-evolution-')));
afterEach(() => cleanup());

interface Tx {
  account: string;
  amount: number;
}
const txs: Tx[] = Array.from({ length: 40 }, (_, i) => ({ account: `a${i % 4}`, amount: i }));

/**
 * A job whose keyed process function runs `step` per record with the given state; it emits what `step` returns.
 * `keyOf` picks the key (the account by default).
 */
function stateJob<S, R>(
  backend: StateBackend | undefined,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any stored type
  descriptor: StateDescriptor<S, any>,
  step: (state: S, tx: Tx) => R,
  records: Tx[] | ReturnType<typeof pausableSource<Tx>>['source'],
  keyOf: (tx: Tx) => Key = (tx) => tx.account,
) {
  const out = collect<R>();
  const job = createJob({ name: 'evolve', chunkSize: 10, stateBackend: backend, checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } });
  job
    .source(Array.isArray(records) ? fromArray(records) : records, { uid: 'txs' })
    .pipe(keyBy(keyOf), process<Tx, R>({ onElement: (tx, ctx, o) => o.emit(step(ctx.state(descriptor), tx)) }, { uid: 'balances' }), out.sink({ uid: 'out' }));
  return { job, out };
}

const balanceV1 = valueState<number>('balance', { default: 0 });
const addV1 = (state: { value(): number | undefined; update(v: number): void }, tx: Tx) => {
  state.update(state.value()! + tx.amount);
  return state.value()!;
};

describe.each([
  ['heap', () => undefined],
  ['lmdb', () => lmdbStateBackend({ path: join(dir, 'lmdb') })],
])('schema evolution with the %s backend', (_name, backend) => {
  /** Runs the version-1 job over the first 20 transactions and returns its savepoint. */
  async function savepointV1(descriptor: StateDescriptor<never> = balanceV1 as never, step: (s: never, tx: Tx) => unknown = addV1 as never) {
    const paused = pausableSource(txs, [20]);
    const running = stateJob(backend(), descriptor, step, paused.source).job.start();
    await paused.reached(20);
    const result = await running.stop({ savepoint: { path: join(dir, 'savepoints') } });
    paused.releaseAll();
    return result.checkpoints.at(-1)!.path;
  }

  /** Restores `path` into a job keeping each account's balance in cents: its last totals are every amount × 100. */
  async function expectCentsAfterRestore(descriptor: ReturnType<typeof valueState<{ cents: number }>>, path: string) {
    const { job, out } = stateJob(backend(), descriptor, (state, tx) => {
      state.update({ cents: state.value()!.cents + tx.amount * 100 });
      return state.value()!.cents;
    }, txs);
    await job.start({ restore: { savepoint: path } }).done;
    const totals = new Map<string, number>();
    for (const tx of txs) totals.set(tx.account, (totals.get(tx.account) ?? 0) + tx.amount);
    expect(out.values.slice(-4).sort((a, b) => a - b)).toEqual(Array.from(totals.values(), (v) => v * 100).sort((a, b) => a - b));
  }

  it('migrates older values with migrate(value, fromVersion) when the state is first used', async () => {
    const path = await savepointV1();
    const seen: number[] = [];
    const balanceV2 = valueState<{ cents: number }>('balance', {
      default: { cents: 0 },
      version: 2,
      migrate: (old, from) => {
        seen.push(from);
        return { cents: (old as number) * 100 };
      },
    });
    await expectCentsAfterRestore(balanceV2, path);
    expect(new Set(seen)).toEqual(new Set([1]));
  });

  it('migrates values saved as rows of their fields (plain objects) too', async () => {
    // Plain objects of primitive fields are written as rows; a restore builds them anew and must still migrate them.
    const totalV1 = valueState<{ amount: number }>('balance', { default: { amount: 0 } });
    const path = await savepointV1(totalV1 as never, ((state: { value(): { amount: number }; update(v: { amount: number }): void }, tx: Tx) => {
      state.update({ amount: state.value().amount + tx.amount });
      return state.value().amount;
    }) as never);
    const totalV2 = valueState<{ cents: number }>('balance', { default: { cents: 0 }, version: 2, migrate: (old) => ({ cents: (old as { amount: number }).amount * 100 }) });
    await expectCentsAfterRestore(totalV2, path);
  });

  it('migrates each element of a list state', async () => {
    const oldList = listState<number>('seen');
    const path = await savepointV1(oldList as never, ((state: { add(v: number): void; get(): number[] }, tx: Tx) => (state.add(tx.amount), state.get().length)) as never);
    const newList = listState<{ amount: number }>('seen', { version: 3, migrate: (old) => ({ amount: old as number }) });
    const { job, out } = stateJob(backend(), newList, (state, tx) => {
      state.add({ amount: tx.amount });
      return state.get().reduce((sum, e) => sum + e.amount, 0);
    }, txs);
    await job.start({ restore: { savepoint: path } }).done;
    // a0's first record after the restore (txs[20]): everything it saw before (0 + 4 + 8 + 12 + 16) plus 20.
    expect(out.values[0]).toBe(0 + 4 + 8 + 12 + 16 + 20);
  });

  it('rejects state saved with a newer version than the job has with StateMigrationError', async () => {
    const v2 = valueState<number>('balance', { default: 0, version: 2, migrate: (old) => old as number });
    const path = await savepointV1(v2 as never);
    const error = await stateJob(backend(), balanceV1, addV1, txs).job.start({ restore: { savepoint: path } }).done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateMigrationError);
    expect((error as Error).message).toMatch(/'balances'.*'balance'.*version 2.*version 1/);
  });

  it('rejects a newer version without migrate', async () => {
    const path = await savepointV1();
    const v2 = valueState<number>('balance', { default: 0, version: 2 });
    const error = await stateJob(backend(), v2, addV1, txs).job.start({ restore: { savepoint: path } }).done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateMigrationError);
    expect((error as Error).message).toContain('migrate');
  });

  it('rejects state restored as another kind', async () => {
    const path = await savepointV1();
    const asList = listState<number>('balance');
    const error = await stateJob(backend(), asList, (s, tx) => (s.add(tx.amount), 0), txs).job.start({ restore: { savepoint: path } }).done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateMigrationError);
    expect((error as Error).message).toMatch(/'balances'.*'balance'.*value state.*list state/);
  });

  it('rejects a change of the key type', async () => {
    const path = await savepointV1();
    const error = await stateJob(backend(), balanceV1, addV1, txs, (tx) => tx.amount % 4)
      .job.start({ restore: { savepoint: path } })
      .done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateMigrationError);
    expect((error as Error).message).toMatch(/'balances'.*'balance'.*keys of type string.*number/);
  });
});
