// The end-to-end example of README "Connectors" (`npm run demo:orders`, demo/orders.ts): orders from a NATS JetStream
// stream, each customer's totals per minute of event time (tumbling windows), enriched with the customer's name and
// tier from PostgreSQL (mapAsync + postgresLookup), written to a PostgreSQL table exactly once (postgresSink).
// It makes its own stream and schema (random names) and removes them when done; the job's rows are returned.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { assignTimestamps, createJob, keyBy, map, mapAsync, reduce, sinkTo, tumbling, window } from 'weir';
import { fsCheckpointStorage, natsSource, postgresLookup, postgresSink } from 'weir/node';

export interface Order {
  id: number;
  customer: number;
  /** In cents. */
  amount: number;
  /** Event time: when the order was placed, ms since the epoch. */
  ts: number;
}

/** One customer's orders in one minute, as the job writes it. */
export interface MinuteTotal {
  customer: number;
  name: string;
  tier: string;
  /** The window's start, ISO 8601. */
  minute: string;
  orders: number;
  total: number;
}

/** A customer's orders, counted and summed. */
type Sum = Pick<MinuteTotal, 'customer' | 'orders' | 'total'>;

export const CUSTOMERS = ['ann', 'bob', 'cid', 'dee', 'eve', 'fay', 'gus', 'hal'];

/**
 * `count` orders, the same on every run: placed about every 2.5 s from 09:00 on 1 Jan 2026, a little out of order
 * (up to 2 s, as orders from several shop servers arrive), by customers 1…8 (and, now and then, customer 9, whom the
 * customers table does not know).
 */
export function makeOrders(count: number): Order[] {
  let seed = 7;
  const next = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
  const start = Date.UTC(2026, 0, 1, 9, 0, 0);
  return Array.from({ length: count }, (_, id) => ({
    id,
    customer: 1 + Math.floor(next() * (CUSTOMERS.length + 0.25)),
    amount: 100 + Math.floor(next() * 9_900),
    ts: start + 2_000 + id * 2_500 - Math.floor(next() * 2_000),
  }));
}

export interface OrdersDemoOptions {
  /** NATS servers; 127.0.0.1:4222 by default. */
  nats?: string;
  /** A postgres:// URL; the loopback server's `test` database by default. */
  postgres?: string;
  orders?: number;
  /** Told what the demo does, step by step. */
  log?: (line: string) => void;
}

export async function runOrdersDemo(options: OrdersDemoOptions = {}): Promise<{ orders: Order[]; rows: MinuteTotal[] }> {
  const { nats: servers = '127.0.0.1:4222', postgres = 'postgres://postgres@127.0.0.1:5432/test', log = () => undefined } = options;
  const orders = makeOrders(options.orders ?? 600);
  const suffix = Math.random().toString(36).slice(2, 10);
  const stream = `weir_demo_orders_${suffix}`;
  const schema = `weir_demo_${suffix}`;

  const connection = await connect({ servers });
  const jsm = await jetstreamManager(connection);
  const admin = new pg.Client({ connectionString: postgres });
  await admin.connect();
  const checkpoints = await mkdtemp(join(tmpdir(), 'weir-demo-orders-'));
  try {
    // One subject: a subtask reads a stream's subjects one after another, and the watermark is made after the source.
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    const js = jetstream(connection);
    for (let i = 0; i < orders.length; i += 100) await Promise.all(orders.slice(i, i + 100).map((order) => js.publish(`${stream}.orders`, JSON.stringify(order))));
    log(`published ${orders.length} orders to the NATS stream ${stream}`);

    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`CREATE TABLE ${schema}.customers (id int PRIMARY KEY, name text NOT NULL, tier text NOT NULL)`);
    await admin.query(`INSERT INTO ${schema}.customers SELECT i, ($1::text[])[i], CASE WHEN i % 3 = 0 THEN 'gold' ELSE 'basic' END FROM generate_series(1, $2) i`, [CUSTOMERS, CUSTOMERS.length]);
    await admin.query(
      `CREATE TABLE ${schema}.minute_totals (customer int, minute timestamptz, name text NOT NULL, tier text NOT NULL, orders int NOT NULL, total bigint NOT NULL, PRIMARY KEY (customer, minute))`,
    );
    log(`created the PostgreSQL schema ${schema}: customers (${CUSTOMERS.length} rows) and minute_totals`);

    const customer = postgresLookup({
      connection: postgres,
      query: `SELECT name, tier FROM ${schema}.customers WHERE id = $1`,
      params: (total: Sum & { minute: string }) => [total.customer],
      result: (total, rows): MinuteTotal => ({ ...total, name: String(rows[0]?.name ?? 'unknown'), tier: String(rows[0]?.tier ?? 'none') }),
    });
    const job = createJob({ name: `orders-${suffix}`, checkpoints: { storage: fsCheckpointStorage(checkpoints), interval: 500 } });
    job
      .source(natsSource<Order>({ servers, stream }), { uid: 'orders' })
      .pipe(
        assignTimestamps((order) => order.ts, { outOfOrderness: 5_000 }),
        map((order): Sum => ({ customer: order.customer, orders: 1, total: order.amount })),
        keyBy((sum) => sum.customer),
        window(tumbling(60_000)),
        // Each minute's sum, kept incrementally; `process` adds the window's start when the minute closes.
        reduce<Sum, Sum & { minute: string }>((a, b) => ({ customer: a.customer, orders: a.orders + b.orders, total: a.total + b.total }), {
          uid: 'minute-totals',
          process: { process: (_key, { window }, [sum], out) => out.emit({ ...sum!, minute: new Date(window.start).toISOString() }) },
        }),
        mapAsync(customer, { uid: 'customer', capacity: 8 }),
        sinkTo(
          postgresSink<MinuteTotal>({ connection: postgres, table: `${schema}.minute_totals`, columns: ['customer', 'minute', 'name', 'tier', 'orders', 'total'], mode: 'upsert', key: ['customer', 'minute'] }),
          { uid: 'minute-totals-out' },
        ),
      );
    const done = await job.start().done;
    await customer.close();
    log(`the job finished after ${done.checkpoints.length} checkpoints`);

    const { rows } = await admin.query<MinuteTotal & { minute: Date; total: string }>(`SELECT * FROM ${schema}.minute_totals ORDER BY minute, customer`);
    return { orders, rows: rows.map((row) => ({ ...row, minute: row.minute.toISOString(), total: Number(row.total) })) };
  } finally {
    await jsm.streams.delete(stream).catch(() => false);
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await admin.end();
    await connection.close();
    await rm(checkpoints, { recursive: true, force: true });
    log(`removed the stream ${stream} and the schema ${schema}`);
  }
}
