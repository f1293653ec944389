import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { collect, createJob, map, sinkTo, type RunningJob } from 'weir';
import { redisStreamSink, redisStreamSource, type RedisStreamEntry } from 'weir/node';
import { addEntries, deleteRedisKeys, readEntries, REDIS_URL, redisTestClient, redisTestPrefix, type RedisTestClient } from '../../support/redisKeys';
import { serverUp } from '../../support/servers';
import { tcpProxy, type TcpProxy } from '../../support/tcpProxy';

const up = await serverUp('redis');

// The server "goes away" behind a TCP proxy that cuts every connection and refuses new ones, and comes back when
// the proxy listens again: the real server keeps its streams meanwhile, as one that restarts with persistence would.
describe.skipIf(!up)('Redis connectors when the server goes away and comes back', () => {
  const prefix = redisTestPrefix();
  let client: RedisTestClient;
  let proxy: TcpProxy;
  let viaProxy = '';
  beforeAll(async () => {
    client = await redisTestClient();
  });
  afterAll(async () => {
    await deleteRedisKeys(client, prefix);
    await client.close();
  });
  beforeEach(async () => {
    proxy = await tcpProxy(6379);
    viaProxy = `redis://127.0.0.1:${proxy.port}`;
  });
  afterEach(async () => {
    await proxy.close();
  });

  const numbers = async (stream: string) => (await readEntries(client, stream)).map((e) => Number(e.message.value));

  it('sink: a commit that meets the server away stays in the state, the next checkpoint fails, and a later one appends it once', { timeout: 120_000 }, async () => {
    const stream = `${prefix}sink-writer`;
    const sink = redisStreamSink<number>({ url: viaProxy, stream: () => stream, progressKey: `${prefix}progress`, toFields: (n) => ({ value: String(n) }) });
    const writer = await sink.open({ uid: 'out', restoredState: undefined, checkpointing: true });
    writer.write(1);
    await writer.snapshot!(1);
    await proxy.down();
    await writer.commit!(1);
    writer.write(2);
    await expect(writer.snapshot!(2)).rejects.toThrow();
    await proxy.up();
    // The client reconnects on its own schedule: checkpoints fail until it did.
    let id = 3;
    await vi.waitFor(() => writer.snapshot!(id++), { timeout: 60_000, interval: 20 });
    expect(await numbers(stream)).toEqual([1]);
    await writer.commit!(id - 1);
    expect(await numbers(stream)).toEqual([1, 2]);
    await writer.finish();
  });

  it('job: the server away fails checkpoints within tolerableFailures, not the job, which commits everything once when it is back', { timeout: 180_000 }, async () => {
    const input = `${prefix}job-in`;
    const output = `${prefix}job-out`;
    await addEntries(client, input, 100, (i) => ({ value: String(i) }));
    const job = createJob({ name: 'redis-away', checkpoints: { tolerableFailures: 1000 } });
    job
      .source(redisStreamSource({ url: REDIS_URL, streams: [input], block: 50 }), { uid: 'in' })
      .pipe(sinkTo(redisStreamSink<RedisStreamEntry<Record<string, string>>>({ url: viaProxy, stream: () => output, progressKey: `${prefix}progress`, toFields: (e) => e.value }), { uid: 'out' }));
    const running: RunningJob = job.start();
    let failed: unknown;
    running.done.catch((error: unknown) => (failed = error));
    await vi.waitFor(async () => {
      await running.checkpoint();
      expect(await numbers(output)).toHaveLength(100);
    }, { timeout: 60_000, interval: 20 });

    await proxy.down();
    await addEntries(client, input, 100, (i) => ({ value: String(100 + i) }));
    // The first checkpoint's commit meets the server away (and keeps its records); the next one fails on it.
    await vi.waitFor(() => expect(running.checkpoint()).rejects.toThrow(), { timeout: 60_000, interval: 20 });
    expect(failed).toBeUndefined();
    await proxy.up();
    await vi.waitFor(async () => {
      await running.checkpoint();
      expect(await numbers(output)).toHaveLength(200);
    }, { timeout: 60_000, interval: 20 });
    await running.cancel();
    expect(failed).toBeUndefined();
    expect(await numbers(output)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it('source: reading resumes after the saved id once the server is back, nothing skipped or read twice', { timeout: 180_000 }, async () => {
    const stream = `${prefix}source-in`;
    await addEntries(client, stream, 100, (i) => ({ n: String(i) }));
    const out = collect<number>();
    const job = createJob({ name: 'redis-source-away', checkpoints: { interval: 20 } });
    job.source(redisStreamSource({ url: viaProxy, streams: [stream], block: 50, parse: (f) => Number(f.n) }), { uid: 'in' }).pipe(
      map((entry) => entry.value),
      out.sink(),
    );
    const running = job.start();
    let failed: unknown;
    running.done.catch((error: unknown) => (failed = error));
    await vi.waitFor(() => expect(out.values).toHaveLength(100), { timeout: 60_000, interval: 20 });
    await proxy.down();
    await addEntries(client, stream, 100, (i) => ({ n: String(100 + i) }));
    // Checkpoints go on while the reader waits for the server: its offset is the last id it returned.
    await running.checkpoint();
    await proxy.up();
    await vi.waitFor(() => expect(out.values).toHaveLength(200), { timeout: 60_000, interval: 20 });
    await running.cancel();
    expect(failed).toBeUndefined();
    expect(out.values).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });
});
