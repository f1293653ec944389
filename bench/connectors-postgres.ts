import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createJob, fromArray, sinkTo } from 'weir';
import { fsCheckpointStorage, postgresSink } from 'weir/node';
import { perSecond, sideBySide } from './measure';
import type { Result } from './report';

// weir → postgresSink (write-ahead, exactly-once, file-system checkpoints every second) against a hand-written
// at-least-once consumer that inserts each batch of the same records into the same table as it goes (one multi-row
// INSERT per batch, autocommit: what a service without weir does), on the loopback PostgreSQL, same data, same run.
// The row `connectors/nats-to-postgres-vs-hand-written` reads from NATS JetStream; this one reads from memory
// (fromArray / a plain loop) so that it measures the sink alone. To read from NATS: replace `fromArray(orders)` with
// the NATS JetStream source of weir/node, and the hand-written loop's `orders.slice` with a JetStream pull
// consumer's `fetch({ max_messages: BATCH })`, inserting each fetched batch and then acking it.

const CONNECTION = process.env.WEIR_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = 500;

interface Order {
  id: number;
  customer: string;
  amount: number;
}

/** Records/s of `fromArray → postgresSink` with checkpoints every second to a fresh directory. */
async function weirRun(orders: readonly Order[], table: string): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-bench-pg-'));
  try {
    const job = createJob({ name: 'bench-postgres', checkpoints: { storage: fsCheckpointStorage(dir), interval: 1_000 } });
    job
      .source(fromArray(orders), { uid: 'orders' })
      .pipe(sinkTo(postgresSink<Order>({ connection: CONNECTION, table, columns: ['id', 'customer', 'amount'], batchSize: BATCH }), { uid: 'orders-out' }));
    const start = performance.now();
    await job.start().done;
    return perSecond(orders.length, performance.now() - start);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Records/s of a plain loop inserting each batch of `BATCH` records as it is taken (at-least-once after a crash). */
async function handWritten(orders: readonly Order[], client: pg.Client, table: string): Promise<number> {
  const start = performance.now();
  for (let at = 0; at < orders.length; at += BATCH) {
    const batch = orders.slice(at, at + BATCH);
    const values: unknown[] = [];
    const tuples = batch.map((order, i) => {
      values.push(order.id, order.customer, order.amount);
      return `($${i * 3 + 1}, $${i * 3 + 2}, $${i * 3 + 3})`;
    });
    await client.query(`INSERT INTO ${table} (id, customer, amount) VALUES ${tuples.join(', ')}`, values);
  }
  return perSecond(orders.length, performance.now() - start);
}

/**
 * The `connectors/postgres-sink-vs-hand-written` rows: both sides' records/s and their ratio (the issue's bar for the
 * NATS → PostgreSQL pair is ≥ 0.8). Needs the loopback PostgreSQL (`WEIR_BENCH_POSTGRES` overrides the URL).
 */
export async function connectorsPostgres({ records = 100_000, rounds = 3 }: { records?: number; rounds?: number } = {}): Promise<Result[]> {
  const orders: Order[] = Array.from({ length: records }, (_, i) => ({ id: i, customer: `c${i % 1000}`, amount: i % 97 }));
  const schema = `weir_bench_${Math.random().toString(36).slice(2, 10)}`;
  const client = new pg.Client({ connectionString: CONNECTION });
  await client.connect();
  const table = `${schema}.orders`;
  try {
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`CREATE TABLE ${table} (id int NOT NULL, customer text NOT NULL, amount int NOT NULL)`);
    const fresh = async () => void (await client.query(`TRUNCATE ${table}`));
    const best = await sideBySide(
      {
        weir: async () => (await fresh(), await weirRun(orders, table)),
        handWritten: async () => (await fresh(), await handWritten(orders, client, table)),
      },
      { rounds, best: 'max' },
    );
    const name = 'connectors/postgres-sink-vs-hand-written';
    return [
      { name: `${name}/weir-exactly-once`, value: best.weir, unit: 'records/s' },
      { name: `${name}/hand-written-at-least-once`, value: best.handWritten, unit: 'records/s' },
      { name, value: best.weir / best.handWritten, unit: 'ratio', bar: { op: '>=', value: 0.8 } },
    ];
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
}
