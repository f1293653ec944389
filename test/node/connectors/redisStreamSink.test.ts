import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointCorruptedError, JobDefinitionError, createJob, fromArray, sinkTo, type Json } from 'weir';
import { redisStreamSink } from 'weir/node';
import { deleteRedisKeys, readEntries, REDIS_URL, redisTestClient, redisTestPrefix, type RedisTestClient } from '../../support/redisKeys';
import { serverUp } from '../../support/servers';

const up = await serverUp('redis');

interface Order {
  region: string;
  n: number;
}

describe.skipIf(!up)('redisStreamSink', () => {
  const prefix = redisTestPrefix();
  const progressKey = `${prefix}progress`;
  let client: RedisTestClient;
  beforeAll(async () => {
    client = await redisTestClient();
  });
  afterAll(async () => {
    await deleteRedisKeys(client, prefix);
    await client.close();
  });

  const values = async (stream: string) => (await readEntries(client, stream)).map((e) => JSON.parse(e.message.value!) as Order);
  const sinkFor = (name: string) =>
    redisStreamSink<Order>({ url: REDIS_URL, stream: (o) => `${prefix}${name}:${o.region}`, progressKey });
  const open = (name: string, uid: string, restoredState?: Json) => sinkFor(name).open({ uid, restoredState, checkpointing: true });

  it("appends each checkpoint's records when it completes, to the stream each record names", { timeout: 120_000 }, async () => {
    const orders = Array.from({ length: 2000 }, (_, n) => ({ region: n % 3 === 0 ? 'eu' : 'us', n }));
    const job = createJob({ name: 'redis-sink', checkpoints: { interval: 10 }, chunkSize: 50 });
    job.source(fromArray(orders), { uid: 'orders' }).pipe(sinkTo(sinkFor('job'), { uid: 'orders-out' }));
    await job.start().done;
    expect(await values(`${prefix}job:eu`)).toEqual(orders.filter((o) => o.region === 'eu'));
    expect(await values(`${prefix}job:us`)).toEqual(orders.filter((o) => o.region === 'us'));
  });

  it('keeps records in its state until the checkpoint completes, and skips a replayed commit', { timeout: 60_000 }, async () => {
    const stream = `${prefix}replay:eu`;
    const first = await open('replay', 'replay-out');
    first.write({ region: 'eu', n: 1 });
    first.write({ region: 'eu', n: 2 });
    const state = await first.snapshot!(1);
    // Between the barrier and the completion the records are only in the state.
    expect(await values(stream)).toEqual([]);
    await first.commit!(1);
    expect(await values(stream)).toEqual([{ region: 'eu', n: 1 }, { region: 'eu', n: 2 }]);
    expect(await client.hGet(progressKey, 'replay-out')).toBe('1');
    await first.abort();

    // A crash after the commit: the restore finds the marker at 1 and appends nothing again.
    const second = await open('replay', 'replay-out', state);
    expect(await values(stream)).toHaveLength(2);
    second.write({ region: 'eu', n: 3 });
    await second.snapshot!(2);
    await second.commit!(2);
    await second.finish();
    expect((await values(stream)).map((o) => o.n)).toEqual([1, 2, 3]);
  });

  it('appends on restore a checkpoint whose commit the crash prevented, once however often it is restored', { timeout: 60_000 }, async () => {
    const stream = `${prefix}uncommitted:us`;
    const first = await open('uncommitted', 'uncommitted-out');
    first.write({ region: 'us', n: 1 });
    const state = await first.snapshot!(1);
    await first.abort();
    expect(await values(stream)).toEqual([]);
    for (let restore = 0; restore < 3; restore++) await (await open('uncommitted', 'uncommitted-out', state)).abort();
    expect(await values(stream)).toEqual([{ region: 'us', n: 1 }]);
  });

  it('appends once when four writers of the same sink replay the same commit side by side (WATCH)', { timeout: 60_000 }, async () => {
    const stream = `${prefix}concurrent:eu`;
    const first = await open('concurrent', 'concurrent-out');
    for (let n = 0; n < 500; n++) first.write({ region: 'eu', n });
    const state = await first.snapshot!(1);
    await first.abort();
    const writers = await Promise.all(Array.from({ length: 4 }, () => open('concurrent', 'concurrent-out', state)));
    await Promise.all(writers.map((w) => w.abort()));
    expect((await values(stream)).map((o) => o.n)).toEqual(Array.from({ length: 500 }, (_, n) => n));
  });

  it('forgets the marker of an earlier run on a fresh start, which numbers checkpoints from 1 again', { timeout: 60_000 }, async () => {
    const stream = `${prefix}fresh:eu`;
    for (let run = 0; run < 2; run++) {
      const writer = await open('fresh', 'fresh-out');
      writer.write({ region: 'eu', n: run });
      await writer.snapshot!(1);
      await writer.commit!(1);
      await writer.finish();
    }
    expect((await values(stream)).map((o) => o.n)).toEqual([0, 1]);
  });

  it('appends in batches, without a marker, when the job runs without checkpoints', { timeout: 60_000 }, async () => {
    const orders = Array.from({ length: 1500 }, (_, n) => ({ region: 'eu', n }));
    const job = createJob({ name: 'redis-sink-unchecked' });
    job.source(fromArray(orders), { uid: 'orders' }).pipe(sinkTo(sinkFor('unchecked'), { uid: 'unchecked-out' }));
    await job.start().done;
    expect(await values(`${prefix}unchecked:eu`)).toEqual(orders);
    expect(await client.hGet(progressKey, 'unchecked-out')).toBeNull();
  });

  it('refuses bad options and a state that is not its own', async () => {
    expect(() => redisStreamSink({ url: '', stream: () => 'x' })).toThrow(JobDefinitionError);
    expect(() => redisStreamSink({ url: REDIS_URL, stream: 'x' as unknown as () => string })).toThrow(/stream must be a function/);
    await expect(open('corrupt', 'corrupt-out', { pending: 'no' })).rejects.toThrow(CheckpointCorruptedError);
  });

  it('fails the job, naming the sink and the key, before writing anything when a key it appends to is not a stream', { timeout: 60_000 }, async () => {
    const key = `${prefix}refused:eu`;
    await client.set(key, 'not a stream');
    const writer = await open('refused', 'refused-out');
    writer.write({ region: 'us', n: 1 });
    writer.write({ region: 'eu', n: 2 });
    const state = await writer.snapshot!(1);
    await expect(writer.commit!(1)).rejects.toThrow(JobDefinitionError);
    await expect(writer.commit!(1)).rejects.toThrow(`sink 'refused-out' (redisStreamSink(${progressKey})): checkpoint 1 appends to '${key}'`);
    await writer.abort();
    // Nothing was appended and the marker did not move: once the key is gone, a restore appends the checkpoint whole.
    expect(await values(`${prefix}refused:us`)).toEqual([]);
    expect(await client.hGet(progressKey, 'refused-out')).toBeNull();
    await client.del(key);
    await (await open('refused', 'refused-out', state)).abort();
    expect(await values(`${prefix}refused:us`)).toEqual([{ region: 'us', n: 1 }]);
    expect(await values(key)).toEqual([{ region: 'eu', n: 2 }]);
  });
});
