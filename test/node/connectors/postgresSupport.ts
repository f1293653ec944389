// What the PostgreSQL connector tests share: a schema of their own on the `test` database (weir_test_<random>),
// dropped after the file's tests (with the prepared transactions of jobs named after it), and a replayable array source that pauses at a record until released.
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import type { Source } from 'weir';
import { deferred } from '../../support/deferred';

/**
 * The loopback server every machine of this project runs (trust auth). WEIR_TEST_POSTGRES points the tests at another
 * one, say a scratch server with max_prepared_transactions > 0 to run the two-phase tests.
 */
export const POSTGRES_URL = process.env.WEIR_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Registers the `beforeAll` that creates a fresh schema and the `afterAll` that drops it. `sql` runs a statement in
 * it (the search_path is the schema), `rows` returns a query's rows.
 */
export function testSchema(up: boolean) {
  const schema = `weir_test_${Math.random().toString(36).slice(2, 10)}`;
  let client: pg.Client | undefined;
  beforeAll(async () => {
    if (!up) return;
    client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`SET search_path TO ${schema}`);
  });
  afterAll(async () => {
    if (!client) return;
    // A prepared transaction left by a failed two-phase test would hold its locks, and DROP would wait for good.
    const { rows } = await client.query<{ gid: string }>("SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE '%' || $1 || '%'", [schema]);
    for (const { gid } of rows) await client.query(`ROLLBACK PREPARED ${pg.escapeLiteral(gid)}`);
    await client.query(`DROP SCHEMA ${schema} CASCADE`);
    await client.end();
  });
  return {
    schema,
    sql: async (text: string, values?: unknown[]) => void (await client!.query(text, values)),
    rows: async <R extends Record<string, unknown>>(text: string, values?: unknown[]) => (await client!.query<R>(text, values)).rows,
  };
}

/**
 * A replayable source over `records` (offset: the index of the next record) that stops before record `pauseAt`
 * until `release`, so that a checkpoint can be taken there.
 */
export function gatedArray<T>(records: readonly T[], pauseAt: number) {
  const reached = deferred<void>();
  const gate = deferred<void>();
  let released = false;
  const source: Source<T> = {
    name: `gatedArray(${records.length} records)`,
    replayable: true,
    open: ({ restoredOffset }) => {
      let index = typeof restoredOffset === 'number' ? restoredOffset : 0;
      const reader = {
        read(max: number): T[] | null | Promise<T[] | null> {
          if (index >= records.length) return null;
          if (index === pauseAt && !released) {
            reached.resolve();
            // Barriers still go in while a read waits (the source runner races it with their arrival).
            return gate.promise.then(() => reader.read(max));
          }
          const end = Math.min(index + max, records.length, index < pauseAt && !released ? pauseAt : records.length);
          const chunk = records.slice(index, end);
          index = end;
          return chunk;
        },
        offset: () => index,
      };
      return reader;
    },
  };
  return {
    source,
    reached: () => reached.promise,
    release: () => {
      released = true;
      gate.resolve();
    },
  };
}
