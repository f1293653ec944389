import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { createJob, keyBy, map, reduce, sinkTo } from 'weir';
import { fsCheckpointStorage, natsSource, postgresSink } from 'weir/node';
import { noop, perSecond, sideBySide } from './measure';
import type { Result } from './report';

// `connectors/nats-to-postgres-vs-hand-written`: orders read from a NATS JetStream stream (three subjects), each
// customer's running total kept and upserted into a PostgreSQL table. weir: natsSource → keyBy(customer) → reduce →
// postgresSink (upsert, write-ahead: exactly-once), file-system checkpoints every second. Beside it, what a service
// without weir does: a durable pull consumer fetching BATCH messages at a time, adding them to totals in memory,
// upserting the customers the batch touched in one statement, then acking the batch (at-least-once: a crash between
// the upsert and the ack re-adds the batch). Same stream, same table, same run; connecting is timed on both sides.
// Each run's table is checked against the expected totals.

const SERVERS = process.env.BENCH_NATS ?? '127.0.0.1:4222';
const CONNECTION = process.env.WEIR_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = 1000;
const CUSTOMERS = 1000;

interface Order {
  id: number;
  customer: string;
  amount: number;
}

const orderOf = (i: number): Order => ({ id: i, customer: `c${i % CUSTOMERS}`, amount: i % 97 });

/** Records/s of the weir job, checkpoints every second to a fresh directory. */
async function weirRun(stream: string, records: number, table: string): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-bench-pg-'));
  try {
    const job = createJob({ name: 'bench-nats-postgres', checkpoints: { storage: fsCheckpointStorage(dir), interval: 1_000 } });
    job
      .source(natsSource<Order>({ servers: SERVERS, stream }), { uid: 'orders', parallelism: 1 })
      .pipe(
        map((order) => ({ customer: order.customer, total: order.amount })),
        keyBy((t) => t.customer),
        reduce((sum, t) => ({ customer: sum.customer, total: sum.total + t.total }), { uid: 'totals' }),
        sinkTo(postgresSink({ connection: CONNECTION, table, columns: ['customer', 'total'], mode: 'upsert', key: ['customer'] }), { uid: 'totals-out' }),
      );
    const start = performance.now();
    await job.start().done;
    return perSecond(records, performance.now() - start);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Records/s of the hand-written at-least-once consumer. */
async function handWritten(stream: string, records: number, table: string): Promise<number> {
  const start = performance.now();
  const connection = await connect({ servers: SERVERS });
  const client = new pg.Client({ connectionString: CONNECTION });
  await client.connect();
  const durable = `bench_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const jsm = await jetstreamManager(connection);
  await jsm.consumers.add(stream, { durable_name: durable, ack_policy: AckPolicy.All });
  try {
    const consumer = await jetstream(connection).consumers.get(stream, durable);
    const totals = new Map<string, number>();
    let seen = 0;
    while (seen < records) {
      const touched = new Set<string>();
      let last: { ackAck(): Promise<boolean> } | undefined;
      for await (const message of await consumer.fetch({ max_messages: Math.min(BATCH, records - seen), expires: 2000 })) {
        const order = message.json<Order>();
        totals.set(order.customer, (totals.get(order.customer) ?? 0) + order.amount);
        touched.add(order.customer);
        last = message;
        seen++;
      }
      if (last === undefined) continue;
      const values: unknown[] = [];
      const tuples = [...touched].map((customer, i) => (values.push(customer, totals.get(customer)), `($${i * 2 + 1}, $${i * 2 + 2})`));
      await client.query(`INSERT INTO ${table} (customer, total) VALUES ${tuples.join(', ')} ON CONFLICT (customer) DO UPDATE SET total = EXCLUDED.total`, values);
      await last.ackAck();
    }
    return perSecond(records, performance.now() - start);
  } finally {
    await jsm.consumers.delete(stream, durable).catch(noop);
    await client.end();
    await connection.close();
  }
}

async function publishOrders(js: JetStreamClient, stream: string, records: number): Promise<void> {
  const subjects = ['a', 'b', 'c'].map((s) => `${stream}.${s}`);
  const window = 256;
  for (let i = 0; i < records; i += window) {
    await Promise.all(Array.from({ length: Math.min(window, records - i) }, (_, k) => js.publish(subjects[(i + k) % 3]!, JSON.stringify(orderOf(i + k)))));
  }
}

/**
 * The `connectors/nats-to-postgres-vs-hand-written` rows: both sides' records/s and their ratio (bar ≥ 0.8). Needs
 * the loopback NATS and PostgreSQL (`BENCH_NATS` and `WEIR_BENCH_POSTGRES` override them).
 */
export async function connectorsPostgres({ records = Number(process.env.BENCH_NATS_PG_RECORDS ?? 100_000), rounds = 3 } = {}): Promise<Result[]> {
  const connection = await connect({ servers: SERVERS }).catch((error: unknown) => {
    throw new Error(`bench connectors: NATS does not answer on ${SERVERS} (${String(error)}); start it with: nats-server -js`);
  });
  const jsm = await jetstreamManager(connection);
  const stream = `weir_bench_pg_${process.pid}`;
  const schema = `weir_bench_${Math.random().toString(36).slice(2, 10)}`;
  const client = new pg.Client({ connectionString: CONNECTION });
  await client.connect();
  const table = `${schema}.totals`;
  try {
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    await publishOrders(jetstream(connection), stream, records);
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`CREATE TABLE ${table} (customer text PRIMARY KEY, total bigint NOT NULL)`);
    let expected = 0;
    for (let i = 0; i < records; i++) expected += orderOf(i).amount;
    /** Times one side on an empty table, then checks that the table holds every customer's total. */
    const timed = async (side: (stream: string, records: number, table: string) => Promise<number>) => {
      await client.query(`TRUNCATE ${table}`);
      const rate = await side(stream, records, table);
      const [row] = (await client.query<{ customers: string; sum: string }>(`SELECT count(*) AS customers, sum(total) AS sum FROM ${table}`)).rows;
      if (Number(row!.customers) !== Math.min(CUSTOMERS, records) || Number(row!.sum) !== expected) {
        throw new Error(`bench nats-to-postgres: the table holds ${row!.customers} customers totalling ${row!.sum}, expected ${expected}`);
      }
      return rate;
    };
    const best = await sideBySide({ weir: () => timed(weirRun), handWritten: () => timed(handWritten) }, { rounds, best: 'max' });
    const name = 'connectors/nats-to-postgres-vs-hand-written';
    return [
      { name: `${name}/weir-exactly-once`, value: best.weir, unit: 'records/s' },
      { name: `${name}/hand-written-at-least-once`, value: best.handWritten, unit: 'records/s' },
      { name, value: best.weir / best.handWritten, unit: 'ratio', bar: { op: '>=', value: 0.8 } },
    ];
  } finally {
    await jsm.streams.delete(stream).catch(noop);
    await connection.close();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
}
