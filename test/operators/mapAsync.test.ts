// mapAsync (Flink's async I/O) on virtual time: a fake service answers on the harness clock, so latencies, timeouts
// and backoff waits are exact; `settle` lets the promises those timers resolve run before the test looks.
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  AsyncTimeoutError,
  JobDefinitionError,
  UserFunctionError,
  collect,
  createJob,
  fromArray,
  fromIterable,
  keyBy,
  mapAsync,
  memoryCheckpointStorage,
  process,
  sinkTo,
  valueState,
  type Flow,
  type MapAsyncOptions,
} from 'weir';
import { harness, record, watermark, type Harness } from 'weir/testing';

interface Order {
  id: number;
  customer: string;
}
const order = (id: number, customer = `c${id % 3}`): Order => ({ id, customer });

/**
 * A service on a virtual clock: answers `order.id * 10` after `latency(order)` ms, counting calls and how many run
 * at once; `failures(order, attempt)` makes an attempt fail instead.
 */
function fakeService(scheduler: VirtualTimeScheduler, latency: (order: Order) => number, failures: (order: Order, attempt: number) => boolean = () => false) {
  const service = {
    calls: [] as { id: number; at: number }[],
    active: 0,
    maxActive: 0,
    aborted: [] as number[],
    call(value: Order, signal: AbortSignal): Promise<number> {
      const attempt = service.calls.filter((c) => c.id === value.id).length + 1;
      service.calls.push({ id: value.id, at: scheduler.now() });
      service.active++;
      service.maxActive = Math.max(service.maxActive, service.active);
      signal.addEventListener('abort', () => service.aborted.push(value.id));
      return new Promise((resolve, reject) =>
        scheduler.schedule(() => {
          service.active--;
          if (failures(value, attempt)) reject(new Error(`service down for order ${value.id}`));
          else resolve(value.id * 10);
        }, latency(value)),
      );
    },
  };
  return service;
}

/** Lets the promises settled by the clock run their callbacks (no time passes). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Moves the harness clock to `time` and lets what it resolved run. */
async function at<I, R>(h: Harness<I, R>, time: number): Promise<void> {
  h.setProcessingTime(time);
  await settle();
}

const latencies: Record<number, number> = { 1: 30, 2: 10, 3: 20 };

async function enrichHarness(options: Partial<MapAsyncOptions<Order, number>>, latency = (o: Order) => latencies[o.id] ?? 5, failures?: (o: Order, attempt: number) => boolean) {
  const scheduler = new VirtualTimeScheduler();
  const service = fakeService(scheduler, latency, failures);
  const h = await harness((input: Flow<Order>) => input.pipe(mapAsync((o: Order, signal) => service.call(o, signal), { uid: 'enrich', ...options })), { scheduler });
  return { h: h as Harness<Order, number>, service };
}

describe('mapAsync: result order', () => {
  it('ordered (the default) emits in input order, each result as soon as those before it are out', async () => {
    const { h } = await enrichHarness({});
    [1, 2, 3].forEach((id) => h.push(order(id), id));
    await at(h, 20);
    expect(h.values()).toEqual([]);
    await at(h, 30);
    expect(h.output()).toEqual([record(10, 1), record(20, 2), record(30, 3)]);
  });

  it('unordered emits each result as it completes, with its record timestamp', async () => {
    const { h } = await enrichHarness({ ordered: false });
    [1, 2, 3].forEach((id) => h.push(order(id), id));
    await at(h, 10);
    expect(h.output()).toEqual([record(20, 2)]);
    await at(h, 30);
    expect(h.values()).toEqual([20, 30, 10]);
  });

  it('unordered never lets a result overtake a watermark, nor a watermark the results before it', async () => {
    const { h } = await enrichHarness({ ordered: false }, (o) => ({ 1: 30, 2: 1, 3: 10 })[o.id]!);
    h.push(order(1), 1);
    h.pushWatermark(5);
    h.push(order(2), 6);
    h.push(order(3), 7);
    await at(h, 10);
    // 2 and 3 are done, but watermark 5 waits for 1, and they wait for it.
    expect(h.output({ watermarks: true })).toEqual([]);
    await at(h, 30);
    expect(h.output({ watermarks: true })).toEqual([record(10, 1), watermark(5), record(20, 6), record(30, 7)]);
  });

  it('keyed, with several instances: a watermark leaves once every instance has emitted the records before it', async () => {
    const scheduler = new VirtualTimeScheduler();
    const service = fakeService(scheduler, (o) => (o.id === 1 ? 30 : 1));
    const h = await harness(
      (input: Flow<Order>) => input.pipe(keyBy((o: Order) => o.customer), mapAsync((o: Order, signal) => service.call(o, signal), { uid: 'enrich', ordered: false, parallelism: 4 })),
      { scheduler },
    );
    for (let id = 1; id <= 8; id++) h.push(order(id, `k${id}`), id);
    h.pushWatermark(8);
    h.push(order(9, 'k9'), 9);
    await at(h, 5);
    expect(h.output({ watermarks: true })).toEqual([2, 3, 4, 5, 6, 7, 8].map((id) => record(id * 10, id)));
    await at(h, 30);
    expect(h.output({ watermarks: true }).slice(7)).toEqual([record(10, 1), watermark(8), record(90, 9)]);
  });

  it('a watermark with nothing in flight passes at once; ordered, it waits for the records before it', async () => {
    const { h } = await enrichHarness({});
    h.pushWatermark(1);
    expect(h.output({ watermarks: true })).toEqual([watermark(1)]);
    h.push(order(2), 2);
    h.pushWatermark(3);
    expect(h.output({ watermarks: true })).toEqual([watermark(1)]);
    await at(h, 10);
    expect(h.output({ watermarks: true })).toEqual([watermark(1), record(20, 2), watermark(3)]);
  });

  it('takes a synchronous result as a completed call', async () => {
    const h = await harness((input: Flow<number>) => input.pipe(mapAsync((n: number) => n + 1, { uid: 'sync' })));
    h.push(1, 1);
    h.push(2, 2);
    expect(h.values()).toEqual([2, 3]);
  });
});

describe('mapAsync: capacity', () => {
  it('never has more than capacity calls in flight; the rest wait their turn in arrival order', async () => {
    const { h, service } = await enrichHarness({ capacity: 2, ordered: false }, () => 10);
    for (let id = 1; id <= 7; id++) h.push(order(id), id);
    expect(service.calls.map((c) => c.id)).toEqual([1, 2]);
    for (let t = 10; t <= 40; t += 10) await at(h, t);
    expect(service.maxActive).toBe(2);
    expect(service.calls.map((c) => [c.id, c.at])).toEqual([[1, 0], [2, 0], [3, 10], [4, 10], [5, 20], [6, 20], [7, 30]]);
    expect(h.values().sort((a, b) => a - b)).toEqual([10, 20, 30, 40, 50, 60, 70]);
  });

  it('ordered: a finished result behind a slow one still holds its slot (Flink counts the queue)', async () => {
    const { h, service } = await enrichHarness({ capacity: 2 }, (o) => (o.id === 1 ? 50 : 5));
    [1, 2, 3].forEach((id) => h.push(order(id), id));
    await at(h, 20);
    expect(service.calls.map((c) => c.id)).toEqual([1, 2]);
    await at(h, 50);
    await at(h, 55);
    expect(h.values()).toEqual([10, 20, 30]);
  });

  it('pauses the source while at capacity: records read ahead of the calls stay within one chunk', async () => {
    let read = 0;
    let maxAhead = 0;
    function* orders() {
      for (let id = 1; id <= 2_000; id++) {
        read++;
        yield order(id);
      }
    }
    let started = 0;
    const job = createJob({ name: 'pressure', chunkSize: 50 });
    const out = collect<number>();
    job
      .source(fromIterable(orders()), { uid: 'orders' })
      .pipe(
        mapAsync(
          (o: Order) => {
            started++;
            maxAhead = Math.max(maxAhead, read - started);
            return new Promise<number>((resolve) => setImmediate(() => resolve(o.id)));
          },
          { uid: 'enrich', capacity: 10 },
        ),
      )
      .pipe(out.sink());
    await job.start().done;
    expect(out.values).toEqual(Array.from({ length: 2_000 }, (_, i) => i + 1));
    // Without backpressure the source reads all 2,000 before the first call returns.
    expect(maxAhead).toBeLessThanOrEqual(50);
  });
});

describe('mapAsync: timeouts and retries', () => {
  it('a call past its timeout gets the onTimeout result, and its signal is aborted', async () => {
    const { h, service } = await enrichHarness({ timeout: 15, onTimeout: (o) => -o.id }, () => 100);
    h.push(order(1), 1);
    await at(h, 14);
    expect(h.values()).toEqual([]);
    await at(h, 15);
    expect(h.values()).toEqual([-1]);
    expect(service.aborted).toEqual([1]);
    await at(h, 100);
    expect(h.values()).toEqual([-1]);
  });

  it("aborts the signal of every call still running when the attempt ends, and drops their late answers", async () => {
    const { h, service } = await enrichHarness({}, () => 100);
    [1, 2].forEach((id) => h.push(order(id), id));
    h.close();
    expect(service.aborted.sort()).toEqual([1, 2]);
    h.setProcessingTime(100);
    await settle();
    expect(h.values()).toEqual([]);
  });

  it('without onTimeout a timeout fails the attempt with an AsyncTimeoutError naming the operator and the record', async () => {
    const { h } = await enrichHarness({ timeout: 15 }, () => 100);
    h.push(order(1), 1);
    h.push(order(2), 2);
    await at(h, 14);
    expect(() => h.setProcessingTime(15)).toThrow(AsyncTimeoutError);
    expect(() => h.setProcessingTime(16)).toThrow(/mapAsync 'enrich' of job 'harness': record 1 of instance 0 .* within 15 ms; give onTimeout/);
  });

  it('retries a failing call after exponential backoff waits, on the job clock', async () => {
    const { h, service } = await enrichHarness(
      { retry: { attempts: 5, backoff: { initial: 10, multiplier: 2, max: 30 } } },
      () => 1,
      (_o, attempt) => attempt < 5,
    );
    h.push(order(1), 1);
    for (let t = 1; t <= 200; t++) await at(h, t);
    // Fails at 1, waits 10; fails at 12, waits 20; fails at 33, waits 30 (max); fails at 64, waits 30; succeeds.
    expect(service.calls.map((c) => c.at)).toEqual([0, 11, 32, 63, 94]);
    expect(h.values()).toEqual([10]);
  });

  it('retries with a fixed delay, and gives up with the last error once attempts are used up', async () => {
    const { h, service } = await enrichHarness({ retry: { attempts: 3, delay: 5 } }, () => 1, () => true);
    h.push(order(7), 1);
    for (let t = 1; t <= 13; t++) await at(h, t);
    expect(service.calls.map((c) => c.at)).toEqual([0, 6, 12]);
    expect(() => h.setProcessingTime(14)).toThrow('service down for order 7');
  });

  it('retryOn refuses an error: no retry, the attempt fails as a UserFunctionError naming the operator', async () => {
    const job = createJob({ name: 'lookups' });
    let calls = 0;
    job
      .source(fromArray([1]), { uid: 'in' })
      .pipe(
        mapAsync(
          () => {
            calls++;
            return Promise.reject(new TypeError('bad request'));
          },
          { uid: 'lookup', retry: { attempts: 3, delay: 0, retryOn: (error) => !(error instanceof TypeError) } },
        ),
      )
      .pipe(collect().sink());
    const failure = await job.start().done.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UserFunctionError);
    expect((failure as UserFunctionError).uid).toBe('lookup');
    expect((failure as Error).message).toMatch(/operator 'lookup' \(mapAsync\) of job 'lookups' failed: TypeError: bad request/);
    expect(calls).toBe(1);
  });
});

/** Counts per customer what reaches a keyed state downstream of mapAsync, and every value it saw. */
const seen = valueState<number[]>('seen', { default: [] });
const countDownstream = (flow: Flow<number>) =>
  flow.pipe(
    keyBy((n: number) => `c${(n / 10) % 3}`),
    process<number, number>(
      {
        onElement(n, ctx, out) {
          ctx.state(seen).update([...(ctx.state(seen).value() ?? []), n]);
          out.emit(n);
        },
      },
      { uid: 'downstream', states: [seen] },
    ),
  );

describe('mapAsync: checkpoints', () => {
  it('saves the records in flight at a barrier (which goes on at once) and calls them again after a restore: downstream state sees each result once', async () => {
    const scheduler = new VirtualTimeScheduler();
    const service = fakeService(scheduler, (o) => (o.id % 2 === 0 ? 50 : 5));
    const fragment = (input: Flow<Order>) => countDownstream(input.pipe(mapAsync((o: Order, signal) => service.call(o, signal), { uid: 'enrich', ordered: false })));
    const h = await harness(fragment, { scheduler });
    for (let id = 1; id <= 6; id++) h.push(order(id), id);
    await at(h, 10);
    expect(h.values().sort()).toEqual([10, 30, 50]);
    const snapshot = await h.snapshot();
    // The barrier did not wait for the calls in flight.
    expect(service.active).toBe(3);
    h.close();

    const later = new VirtualTimeScheduler();
    const again = fakeService(later, () => 5);
    const restored = await harness((input: Flow<Order>) => countDownstream(input.pipe(mapAsync((o: Order, signal) => again.call(o, signal), { uid: 'enrich', ordered: false }))), {
      scheduler: later,
      restore: snapshot,
    });
    expect(again.calls.map((c) => c.id)).toEqual([2, 4, 6]);
    await at(restored, later.now() + 5);
    expect(restored.values().sort()).toEqual([20, 40, 60]);
    const all = ['c0', 'c1', 'c2'].flatMap((customer) => restored.state<number[]>('downstream', seen, customer) ?? []);
    expect(all.sort((a, b) => a - b)).toEqual([10, 20, 30, 40, 50, 60]);
  });

  it('keyed: saved records go to the instance that owns their key when restored at another parallelism', async () => {
    const scheduler = new VirtualTimeScheduler();
    const service = fakeService(scheduler, (o) => (o.id > 20 ? 1_000 : 1));
    const keyedFragment = (call: typeof service.call, parallelism: number) => (input: Flow<Order>) =>
      countDownstream(input.pipe(keyBy((o: Order) => o.customer), mapAsync(call, { uid: 'enrich', parallelism, capacity: 3 })));
    const h = await harness(keyedFragment((o, s) => service.call(o, s), 2), { scheduler });
    for (let id = 1; id <= 30; id++) h.push(order(id, `k${id % 7}`), id);
    for (let t = 1; t <= 20; t++) await at(h, t);
    const before = h.values();
    const snapshot = await h.snapshot();
    h.close();

    const later = new VirtualTimeScheduler();
    const again = fakeService(later, () => 1);
    const restored = await harness(keyedFragment((o, s) => again.call(o, s), 3), { scheduler: later, restore: snapshot });
    for (let t = 1; t <= 30; t++) await at(restored, later.now() + 1);
    const after = restored.values();
    expect([...before, ...after].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => (i + 1) * 10));
    // Each record called again belongs to the key it was saved with, whichever instance now owns it: per key, results stay in input order.
    for (let k = 0; k < 7; k++) {
      const ids = after.map((n) => n / 10).filter((id) => id % 7 === k);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
    expect(again.maxActive).toBeLessThanOrEqual(9);
  });

  it('a bounded job with checkpoints ends only once every call is out, and its final checkpoint commits them all', async () => {
    const job = createJob({ name: 'final', checkpoints: { storage: memoryCheckpointStorage(), interval: 5 } });
    // A transactional sink that publishes only what checkpoints commit, never at finish.
    const committed: number[] = [];
    let leftAtFinish = -1;
    job
      .source(fromArray(Array.from({ length: 300 }, (_, i) => order(i + 1))), { uid: 'orders' })
      .pipe(
        mapAsync((o: Order) => new Promise<number>((resolve) => setTimeout(() => resolve(o.id), o.id % 5)), { uid: 'enrich', ordered: false, capacity: 20 }),
      )
      .pipe(
        sinkTo<number>(
          {
            name: 'committing',
            open: () => {
              let pending: number[] = [];
              const staged = new Map<number, number[]>();
              return {
                write: (n) => void pending.push(n),
                snapshot: (id) => (staged.set(id, pending), (pending = []), null),
                commit: (id) => {
                  for (const [stagedId, values] of staged) {
                    if (stagedId > id) continue;
                    committed.push(...values);
                    staged.delete(stagedId);
                  }
                },
                finish: () => void (leftAtFinish = pending.length + staged.size),
                abort: () => undefined,
              };
            },
          },
          { uid: 'out' },
        ),
      );
    await job.start().done;
    expect(committed.sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    expect(leftAtFinish).toBe(0);
  });
});

describe('mapAsync: bad options', () => {
  const fn = (n: number) => n;
  it.each([
    [{ uid: 'x', capacity: 0 }, /mapAsync 'x': capacity must be an integer ≥ 1, got 0/],
    [{ uid: 'x', capasity: 3 }, /unknown option 'capasity'; did you mean 'capacity'\?/],
    [{ uid: 'x', onTimeout: () => 0 }, /onTimeout is given but no timeout/],
    [{ uid: 'x', retry: { attempts: 3 } }, /retry takes either delay .* or backoff .*, not neither/],
    [{ uid: 'x', retry: { attempts: 3, backoff: { initial: 10, max: 5 } } }, /retry.backoff.max must be a number of ms ≥ initial \(10\), got 5/],
    [{ uid: '' }, /uid must be a non-empty string/],
  ])('rejects %j with a JobDefinitionError', (options, message) => {
    const attempt = () => mapAsync(fn, options as unknown as MapAsyncOptions<number, number>);
    expect(attempt).toThrow(JobDefinitionError);
    expect(attempt).toThrow(message);
  });

  it('refuses parallelism on an unkeyed flow', () => {
    const job = createJob({ name: 'p' });
    expect(() => job.source(fromArray([1]), { uid: 'in' }).pipe(mapAsync(fn, { uid: 'x', parallelism: 2 }))).toThrow(/parallelism 2 needs a keyed flow/);
  });
});
