import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { CUSTOMERS, runOrdersDemo } from '../../../demo/ordersJob';
import { serverUp } from '../../support/servers';
import { NATS } from './natsStreams';
import { POSTGRES_URL } from './postgresSupport';

// The end-to-end example (`npm run demo:orders`) against the real servers: its table must hold, for each customer and
// minute of event time with orders, their count and sum, with the customer's name and tier from PostgreSQL; and the
// stream and schema it made must be gone after.

const up = (await serverUp('nats')) && (await serverUp('postgres'));

describe.skipIf(!up)('demo: orders from NATS → minute totals enriched from PostgreSQL → PostgreSQL', () => {
  it('writes every customer-minute total once, enriched, and removes its stream and schema', { timeout: 180_000 }, async () => {
    const lines: string[] = [];
    const { orders, rows } = await runOrdersDemo({ nats: NATS, postgres: POSTGRES_URL, orders: 400, log: (line) => lines.push(line) });

    const expected = new Map<string, { customer: number; minute: string; orders: number; total: number }>();
    for (const order of orders) {
      const minute = new Date(Math.floor(order.ts / 60_000) * 60_000).toISOString();
      const sum = expected.get(`${minute} ${order.customer}`) ?? { customer: order.customer, minute, orders: 0, total: 0 };
      expected.set(`${minute} ${order.customer}`, { ...sum, orders: sum.orders + 1, total: sum.total + order.amount });
    }
    const enriched = [...expected.values()].map((sum) => {
      const name = CUSTOMERS[sum.customer - 1];
      return { ...sum, name: name ?? 'unknown', tier: name === undefined ? 'none' : sum.customer % 3 === 0 ? 'gold' : 'basic' };
    });
    const order = (a: { minute: string; customer: number }, b: { minute: string; customer: number }) => a.minute.localeCompare(b.minute) || a.customer - b.customer;
    expect([...rows].sort(order)).toEqual(enriched.sort(order));
    // The data reach an unknown customer and several minutes, so both the lookup's miss and the windows are exercised.
    expect(rows.some((row) => row.name === 'unknown')).toBe(true);
    expect(new Set(rows.map((row) => row.minute)).size).toBeGreaterThan(10);

    const stream = /stream (weir_demo_orders_\w+)/.exec(lines.join('\n'))![1]!;
    const schema = /schema (weir_demo_\w+)/.exec(lines.join('\n'))![1]!;
    const connection = await connect({ servers: NATS });
    const jsm = await jetstreamManager(connection);
    await expect(jsm.streams.info(stream)).rejects.toThrow(/stream not found/);
    await connection.close();
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    const { rows: schemas } = await client.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema]);
    await client.end();
    expect(schemas).toEqual([]);
  });
});
