import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CheckpointCorruptedError, JobDefinitionError, MalformedStreamEntryError, collect, createJob, map, memoryCheckpointStorage } from 'weir';
import { redisStreamSource, type RedisDeadLetter, type RedisStreamEntry } from 'weir/node';
import { addEntries, deleteRedisKeys, REDIS_URL, redisTestClient, redisTestPrefix, type RedisTestClient } from '../../support/redisKeys';
import { serverUp } from '../../support/servers';

const up = await serverUp('redis');

describe.skipIf(!up)('redisStreamSource', () => {
  const prefix = redisTestPrefix();
  let client: RedisTestClient;
  beforeAll(async () => {
    client = await redisTestClient();
  });
  afterAll(async () => {
    await deleteRedisKeys(client, prefix);
    await client.close();
  });

  /** Three streams of `n` entries `{ n: i, stream: k }` under `<prefix><name>:`, and their ids per stream. */
  const threeStreams = async (name: string, n: number) => {
    const streams = [0, 1, 2].map((k) => `${prefix}${name}:s${k}`);
    const ids = await Promise.all(streams.map((stream, k) => addEntries(client, stream, n, (i) => ({ n: String(i), stream: String(k) }))));
    return { streams, ids };
  };
  const byStream = (records: readonly RedisStreamEntry<{ n: number }>[]) => {
    const seen = new Map<string, { id: string; n: number }[]>();
    for (const r of records) seen.set(r.stream, [...(seen.get(r.stream) ?? []), { id: r.id, n: r.value.n }]);
    return seen;
  };

  it('reads three streams as splits, each in order, with the entry id as event time', { timeout: 120_000 }, async () => {
    const { streams, ids } = await threeStreams('read', 300);
    const out = collect<RedisStreamEntry<{ n: number }>>();
    const job = createJob({ name: 'redis-read', checkpoints: { interval: 20 }, chunkSize: 64 });
    job
      .source(redisStreamSource({ url: REDIS_URL, streams, bounded: true, count: 50, parse: (f) => ({ n: Number(f.n) }) }), { uid: 'in', parallelism: 2 })
      .pipe(out.sink({ uid: 'out' }));
    await job.start().done;
    const seen = byStream(out.values);
    expect([...seen.keys()].sort()).toEqual(streams);
    streams.forEach((stream, k) => expect(seen.get(stream)).toEqual(ids[k]!.map((id, n) => ({ id, n }))));
    for (const record of out.values) expect(record.timestamp).toBe(Number(record.id.split('-')[0]));
  });

  it('follows three unbounded streams with one subtask, idle streams not stopping the busy one', { timeout: 120_000 }, async () => {
    const { streams, ids } = await threeStreams('follow', 40);
    const out = collect<RedisStreamEntry<{ n: number }>>();
    const job = createJob({ name: 'redis-follow', checkpoints: { storage: memoryCheckpointStorage(), interval: 60_000 } });
    job.source(redisStreamSource({ url: REDIS_URL, streams, count: 16, block: 200, parse: (f) => ({ n: Number(f.n) }) }), { uid: 'in', parallelism: 1 }).pipe(out.sink({ uid: 'out' }));
    const running = job.start();
    while (out.values.length < 120) await running.checkpoint();
    // Now only the last stream gets entries: the reads of the two others block meanwhile.
    const more = await addEntries(client, streams[2]!, 20, (i) => ({ n: String(40 + i), stream: '2' }));
    while (out.values.length < 140) await running.checkpoint();
    await running.stop();
    const seen = byStream(out.values);
    expect(seen.get(streams[0]!)).toEqual(ids[0]!.map((id, n) => ({ id, n })));
    expect(seen.get(streams[1]!)).toEqual(ids[1]!.map((id, n) => ({ id, n })));
    expect(seen.get(streams[2]!)).toEqual([...ids[2]!, ...more].map((id, n) => ({ id, n })));
  });

  it('lists the streams that match a key pattern, and takes event time from a field', { timeout: 120_000 }, async () => {
    const { streams } = await threeStreams('pattern', 5);
    await client.set(`${prefix}pattern:not-a-stream`, 'x');
    const out = collect<RedisStreamEntry<Record<string, string>>>();
    const job = createJob({ name: 'redis-pattern' });
    job.source(redisStreamSource({ url: REDIS_URL, streams: `${prefix}pattern:*`, bounded: true, timestamp: 'n' }), { uid: 'in' }).pipe(out.sink());
    await job.start().done;
    expect([...new Set(out.values.map((r) => r.stream))].sort()).toEqual(streams);
    expect(out.values.map((r) => r.timestamp)).toEqual(out.values.map((r) => Number(r.value.n)));
  });

  it('resumes after the ids a checkpoint saved: a restored job reads only the entries added since', { timeout: 180_000 }, async () => {
    const { streams, ids } = await threeStreams('restore', 200);
    const storage = memoryCheckpointStorage();
    const parse = (f: Record<string, string>) => ({ n: Number(f.n) });
    // Unbounded, one subtask per stream: it reads on, waiting for entries, until cancelled.
    const first = collect<RedisStreamEntry<{ n: number }>>();
    const job = createJob({ name: 'redis-restore', checkpoints: { storage, interval: 20 } });
    job.source(redisStreamSource({ url: REDIS_URL, streams, parse, block: 50 }), { uid: 'in', parallelism: 3 }).pipe(first.sink({ uid: 'out' }));
    const running = job.start();
    await vi.waitFor(() => expect(first.values.length).toBe(600), { timeout: 120_000, interval: 20 });
    await running.checkpoint();
    await running.cancel();
    const more = await Promise.all(streams.map((stream, k) => addEntries(client, stream, 7, (i) => ({ n: String(200 + i), stream: String(k) }))));

    const second = collect<RedisStreamEntry<{ n: number }>>();
    const again = createJob({ name: 'redis-restore', checkpoints: { storage } });
    again.source(redisStreamSource({ url: REDIS_URL, streams, parse, bounded: true }), { uid: 'in', parallelism: 3 }).pipe(second.sink({ uid: 'out' }));
    const result = await again.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBeDefined();
    const seen = byStream(second.values);
    streams.forEach((stream, k) => expect(seen.get(stream)).toEqual(more[k]!.map((id, i) => ({ id, n: 200 + i }))));
    const firstSeen = byStream(first.values);
    streams.forEach((stream, k) => expect(firstSeen.get(stream)).toEqual(ids[k]!.map((id, n) => ({ id, n }))));
  });

  it('fails on a malformed entry with an error that names the stream, the id and the split', { timeout: 120_000 }, async () => {
    const stream = `${prefix}malformed`;
    const [, bad] = await addEntries(client, stream, 3, (i) => ({ json: i === 1 ? '{oops' : JSON.stringify({ i }) }));
    const job = createJob({ name: 'redis-malformed' });
    job
      .source(redisStreamSource({ url: REDIS_URL, streams: [stream], bounded: true, parse: (f) => JSON.parse(f.json!) as { i: number } }), { uid: 'in' })
      .pipe(collect<unknown>().sink());
    const error: unknown = await job.start().done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedStreamEntryError);
    expect(error).toMatchObject({ stream, id: bad, split: stream, name: 'MalformedStreamEntryError' });
    expect((error as Error).message).toContain(`entry ${bad} of stream '${stream}'`);
    expect((error as Error).message).toContain('deadLetter');
    expect((error as Error).cause).toBeInstanceOf(SyntaxError);
  });

  it('sends malformed entries to deadLetter with their reason and reads on', { timeout: 120_000 }, async () => {
    const stream = `${prefix}dead-letter`;
    const ids = await addEntries(client, stream, 6, (i) => (i % 3 === 2 ? { at: 'never' } : { at: String(1000 + i) }));
    const dead: RedisDeadLetter[] = [];
    const out = collect<number>();
    const job = createJob({ name: 'redis-dead-letter' });
    job
      .source(redisStreamSource({ url: REDIS_URL, streams: [stream], bounded: true, timestamp: 'at', deadLetter: (entry) => void dead.push(entry) }), { uid: 'in' })
      .pipe(
        map((entry) => entry.timestamp),
        out.sink(),
      );
    await job.start().done;
    expect(out.values).toEqual([1000, 1001, 1003, 1004]);
    expect(dead.map((d) => ({ id: d.id, stream: d.stream, split: d.split, fields: d.fields }))).toEqual([
      { id: ids[2], stream, split: stream, fields: { at: 'never' } },
      { id: ids[5], stream, split: stream, fields: { at: 'never' } },
    ]);
    expect(dead[0]!.reason).toContain("field 'at'");
    expect(dead[0]!.error).toBeInstanceOf(MalformedStreamEntryError);
  });

  it('refuses bad options, and an offset that is not an entry id, naming the source and the stream', async () => {
    expect(() => redisStreamSource({ url: REDIS_URL, streams: [] })).toThrow(JobDefinitionError);
    expect(() => redisStreamSource({ url: REDIS_URL, streams: ['a', 'a'] })).toThrow(/names a stream twice/);
    expect(() => redisStreamSource({ url: REDIS_URL, streams: ['a'], count: 0 })).toThrow(/count must be an integer/);
    expect(() => redisStreamSource({ url: 'redis://user:secret@127.0.0.1:6379', streams: ['a'], block: -1 })).toThrow(/^(?!.*secret)/);
    const source = redisStreamSource({ url: REDIS_URL, streams: [`${prefix}offset`] });
    const [split] = await source.splits!.list();
    expect(() => source.splits!.open(split!, { uid: 'in', restoredOffset: 42 })).toThrow(CheckpointCorruptedError);
    expect(() => source.splits!.open(split!, { uid: 'in', restoredOffset: 42 })).toThrow(`stream '${prefix}offset'`);
  });

  it('fails at once, naming the stream, when a key it reads is not a stream', { timeout: 60_000 }, async () => {
    const key = `${prefix}a-string`;
    await client.set(key, 'not a stream');
    const job = createJob({ name: 'redis-wrongtype', restart: { strategy: 'fixed-delay', attempts: 3, delay: 1 } });
    job.source(redisStreamSource({ url: REDIS_URL, streams: [key], block: 50 }), { uid: 'in' }).pipe(collect<unknown>().sink());
    const error: unknown = await job.start().done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobDefinitionError);
    expect((error as Error).message).toContain(`XREAD of stream '${key}'`);
    expect((error as Error).message).toContain('WRONGTYPE');
  });
});
