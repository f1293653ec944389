import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import { createJob, sinkTo } from 'weir';
import { redisStreamSource } from 'weir/node';
import { noop, perSecond, sideBySide } from './measure';
import type { Result } from './report';

// redisStreamSource reading one bounded stream to its end into a sink that drops records, beside node-redis's own
// XREAD loop over the same stream with the same COUNT: what the source costs over the client it is built on (the
// split machinery, the entry → record mapping, the engine's chunks). Redis on WEIR_BENCH_REDIS_URL, else loopback.

const URL = process.env.WEIR_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const COUNT = 1024;

/** Records/s of a bounded redisStreamSource over `stream` into a dropping sink. */
async function weirRun(stream: string, entries: number): Promise<number> {
  const job = createJob({ name: 'bench-redis-source', chunkSize: COUNT });
  job
    .source(redisStreamSource({ url: URL, streams: [stream], bounded: true, count: COUNT }), { uid: 'in' })
    .pipe(sinkTo({ name: 'drop', open: () => ({ write: noop, finish: noop, abort: noop }) }, { uid: 'out' }));
  const start = performance.now();
  await job.start().done;
  return perSecond(entries, performance.now() - start);
}

/** Entries/s of a plain `XREAD COUNT` loop from the stream's start to its end, on a fresh connection as the source's. */
async function rawRun(stream: string, entries: number): Promise<number> {
  const start = performance.now();
  const client = createClient({ url: URL });
  await client.connect();
  let last = '0-0';
  let read = 0;
  for (;;) {
    const reply = (await client.xRead({ key: stream, id: last }, { COUNT })) as { messages: { id: string }[] }[] | null;
    const messages = reply?.[0]?.messages ?? [];
    if (messages.length === 0) break;
    read += messages.length;
    last = messages[messages.length - 1]!.id;
  }
  client.destroy();
  if (read !== entries) throw new Error(`the raw XREAD loop read ${read} entries of ${entries}`);
  return perSecond(entries, performance.now() - start);
}

/** `connectors/redis-source-records-per-s`, the raw client's rate over the same stream, and their ratio. */
export async function connectorsRedis({ entries = 200_000, rounds = 4 }: { entries?: number; rounds?: number } = {}): Promise<Result[]> {
  const client = createClient({ url: URL });
  await client.connect();
  const stream = `weir-bench:${randomBytes(6).toString('hex')}:source`;
  try {
    for (let i = 0; i < entries; i += 10_000) {
      const multi = client.multi();
      for (let k = i; k < Math.min(entries, i + 10_000); k++) multi.xAdd(stream, '*', { user: `u${k % 1000}`, amount: String(k % 97) });
      await multi.exec();
    }
    const best = await sideBySide({ weir: () => weirRun(stream, entries), raw: () => rawRun(stream, entries) }, { rounds, best: 'max' });
    return [
      { name: 'connectors/redis-source-records-per-s', value: best.weir, unit: 'records/s' },
      { name: 'connectors/redis-raw-client-xread-per-s', value: best.raw, unit: 'entries/s' },
      { name: 'connectors/redis-source-vs-raw-client', value: best.weir / best.raw, unit: 'ratio', bar: { op: '>=', value: 0.7 } },
    ];
  } finally {
    await client.del(stream);
    client.destroy();
  }
}
