import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createJob, sinkTo } from 'weir';
import { natsSource } from 'weir/node';
import { noop, perSecond, sideBySide } from './measure';
import type { Result } from './report';

// Connectors against the servers on loopback. `connectors/nats-source-records-per-s`: a bounded natsSource reading a
// stream of RECORDS small JSON messages over three subjects (three splits, one subtask: one thread on each side),
// parsing each, into a sink that drops them; beside it, the raw client's own read rate of the same stream: one
// ordered consumer over every subject, `consume()` with the client's default pull sizes, parsing each message the same
// way. The bar is natsSource ≥ 0.7 of the raw client.

const SERVERS = process.env.BENCH_NATS ?? '127.0.0.1:4222';
const RECORDS = Number(process.env.BENCH_NATS_RECORDS ?? 200_000);

/** Records/s of `natsSource (bounded) → drop`. */
async function weirRead(stream: string): Promise<number> {
  const job = createJob({ name: 'bench-nats-source' });
  let seen = 0;
  job
    .source(natsSource<unknown>({ servers: SERVERS, stream }), { uid: 'in', parallelism: 1 })
    .pipe(sinkTo({ name: 'drop', open: () => ({ write: () => void seen++, finish: noop, abort: noop }) }, { uid: 'out' }));
  const start = performance.now();
  await job.start().done;
  if (seen !== RECORDS) throw new Error(`natsSource read ${seen} records of ${RECORDS}`);
  return perSecond(RECORDS, performance.now() - start);
}

/** Records/s of the raw client: an ordered consumer over the whole stream, connection included, as on weir's side. */
async function rawRead(stream: string): Promise<number> {
  const start = performance.now();
  const connection = await connect({ servers: SERVERS });
  const consumer = await jetstream(connection).consumers.get(stream);
  const messages = await consumer.consume();
  let seen = 0;
  let checksum = 0;
  for await (const message of messages) {
    checksum += (message.json<{ i: number }>().i & 1);
    if (++seen === RECORDS) break;
  }
  const elapsed = performance.now() - start;
  await consumer.delete().catch(noop);
  await connection.close();
  if (checksum < 0) throw new Error('unreachable: keeps the parse');
  return perSecond(RECORDS, elapsed);
}

export async function connectors(): Promise<Result[]> {
  const connection = await connect({ servers: SERVERS }).catch((error: unknown) => {
    throw new Error(`bench connectors: NATS does not answer on ${SERVERS} (${String(error)}); start it with: nats-server -js`);
  });
  const jsm = await jetstreamManager(connection);
  const js = jetstream(connection);
  const stream = `weir_bench_${process.pid}`;
  await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
  try {
    const subjects = ['a', 'b', 'c'].map((s) => `${stream}.${s}`);
    const window = 256;
    for (let i = 0; i < RECORDS; i += window) {
      await Promise.all(Array.from({ length: Math.min(window, RECORDS - i) }, (_, k) => js.publish(subjects[(i + k) % 3]!, JSON.stringify({ i: i + k, user: `u${(i + k) % 1000}` }))));
    }
    const best = await sideBySide({ weir: () => weirRead(stream), raw: () => rawRead(stream) }, { rounds: 3, best: 'max' });
    return [
      { name: 'connectors/nats-source-records-per-s', value: best.weir, unit: 'records/s' },
      { name: 'connectors/nats-raw-client-records-per-s', value: best.raw, unit: 'records/s' },
      { name: 'connectors/nats-source-vs-raw-client', value: best.weir / best.raw, unit: 'ratio', bar: { op: '>=', value: 0.7 } },
    ];
  } finally {
    await jsm.streams.delete(stream).catch(noop);
    await connection.close();
  }
}
