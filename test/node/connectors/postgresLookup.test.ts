import { beforeAll, describe, expect, it } from 'vitest';
import { collect, createJob, fromArray, JobDefinitionError, mapAsync } from 'weir';
import { postgresLookup, PostgresLookupError } from 'weir/node';
import { serverUp } from '../../support/servers';
import { POSTGRES_URL, testSchema } from './postgresSupport';

const up = await serverUp('postgres');

interface Order {
  id: number;
  customer: number;
}

describe.skipIf(!up)('postgresLookup', () => {
  const db = testSchema(up);
  beforeAll(async () => {
    await db.sql(`CREATE TABLE ${db.schema}.customers (id int PRIMARY KEY, name text NOT NULL, tier text NOT NULL)`);
    await db.sql(`INSERT INTO ${db.schema}.customers SELECT i, 'customer ' || i, CASE WHEN i % 2 = 0 THEN 'gold' ELSE 'basic' END FROM generate_series(1, 50) i`);
  });
  const query = () => `SELECT name, tier FROM ${db.schema}.customers WHERE id = $1`;

  it('enriches every record in mapAsync, in order, from a pool of connections', { timeout: 120_000 }, async () => {
    const lookup = postgresLookup({
      connection: POSTGRES_URL,
      query: query(),
      params: (order: Order) => [order.customer],
      result: (order, rows) => ({ ...order, customer: rows[0] ?? null }),
      poolSize: 4,
    });
    const orders: Order[] = Array.from({ length: 200 }, (_, i) => ({ id: i, customer: (i % 60) + 1 }));
    const out = collect<{ id: number; customer: Record<string, unknown> | null }>();
    const job = createJob({ name: 'enrich' });
    job.source(fromArray(orders), { uid: 'orders' }).pipe(mapAsync(lookup, { uid: 'enrich', capacity: 16 }), out.sink());
    await job.start().done;
    await lookup.close();
    expect(out.values).toEqual(
      orders.map((order) => ({
        id: order.id,
        customer: order.customer <= 50 ? { name: `customer ${order.customer}`, tier: order.customer % 2 === 0 ? 'gold' : 'basic' } : null,
      })),
    );
  });

  it('returns the first row, or null, by default', async () => {
    const lookup = postgresLookup({ connection: POSTGRES_URL, query: query(), params: (id: number) => [id] });
    expect(await lookup(4)).toEqual({ name: 'customer 4', tier: 'gold' });
    expect(await lookup(99)).toBeNull();
    await lookup.close();
    await expect(lookup(4)).rejects.toThrow(PostgresLookupError);
  });

  it('a failing query rejects with a PostgresLookupError naming the query and parameters, not the connection', async () => {
    const lookup = postgresLookup({ connection: POSTGRES_URL, query: `SELECT colour FROM ${db.schema}.customers WHERE id = $1`, params: (id: number) => [id] });
    const failure = await lookup(1).then(() => undefined, (error: unknown) => error);
    await lookup.close();
    expect(failure).toBeInstanceOf(PostgresLookupError);
    expect((failure as Error).message).toContain('query failed for parameters [1]: column "colour" does not exist (42703)');
    expect((failure as Error).message).toContain(`query: SELECT colour FROM ${db.schema}.customers`);
    expect((failure as Error).message).not.toContain(POSTGRES_URL);
  });

  it('checks its options', () => {
    expect(() => postgresLookup({ connection: POSTGRES_URL, query: 'SELECT 1', params: () => [], poolsize: 2 } as never)).toThrow(JobDefinitionError);
    expect(() => postgresLookup({ connection: POSTGRES_URL, query: 'SELECT 1' } as never)).toThrow('params (a function of the record) are required');
  });
});
