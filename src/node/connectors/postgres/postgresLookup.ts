import type pg from 'pg';
import { checkOptions } from '../../../core/checkOptions.js';
import { JobDefinitionError } from '../../../core/errors.js';
import { openPool, reason, shortHash, type PostgresConnection } from './postgresConnection.js';
import { PostgresLookupError } from './postgresErrors.js';

/** Options of `postgresLookup`. */
export interface PostgresLookupOptions<T, R> {
  /** A `postgres://` URL or node-postgres pool options. Never logged nor put in error messages. */
  connection: PostgresConnection;
  /** A parameterised query (`SELECT name, tier FROM customers WHERE id = $1`). */
  query: string;
  /** The query's parameters for a record. */
  params: (value: T) => unknown[];
  /** The result for a record and the rows its query returned; by default the first row, or null when none. */
  result?: (value: T, rows: Record<string, unknown>[]) => R;
  /** Connections in the pool (default 10): with `mapAsync`'s `capacity`, how many queries run at once. */
  poolSize?: number;
}

/** The function `postgresLookup` returns: a `mapAsync` function, and `close` to end its pool when the job ended. */
export interface PostgresLookup<T, R> {
  (value: T, signal?: AbortSignal): Promise<R>;
  /** Ends the pool's connections; later calls fail. */
  close(): Promise<void>;
}

const KNOWN = ['connection', 'query', 'params', 'result', 'poolSize'];

/**
 * A PostgreSQL lookup for `mapAsync` enrichment: one parameterised query per record on a pool of connections,
 * prepared once per connection (a named statement). A failed query rejects with `PostgresLookupError` naming the
 * query and the parameters, which `mapAsync`'s `retry` and `timeout` handle like any call. As every `mapAsync`
 * call, a lookup may run more than once for a record across restores: keep the query read-only.
 * @example
 * const customer = postgresLookup({
 *   connection: 'postgres://app@127.0.0.1/shop',
 *   query: 'SELECT name, tier FROM customers WHERE id = $1',
 *   params: (order: Order) => [order.customerId],
 *   result: (order, rows) => ({ ...order, customer: rows[0] ?? null }),
 * });
 * orders.pipe(mapAsync(customer, { uid: 'enrich', capacity: 20 }));
 * // after the job: await customer.close();
 */
export function postgresLookup<T, R = Record<string, unknown> | null>(options: PostgresLookupOptions<T, R>): PostgresLookup<T, R> {
  const where = 'postgresLookup';
  checkOptions(where, options, KNOWN);
  if (options === null || typeof options !== 'object' || typeof options.query !== 'string' || typeof options.params !== 'function' || options.connection === undefined) {
    throw new JobDefinitionError(`${where}: connection, query (a string) and params (a function of the record) are required`);
  }
  const { query, params, poolSize = 10 } = options;
  if (!Number.isSafeInteger(poolSize) || poolSize < 1) throw new JobDefinitionError(`${where}: poolSize must be a positive integer, got ${poolSize}`);
  const result = options.result ?? ((_: T, rows: Record<string, unknown>[]) => (rows[0] ?? null) as R);
  // Opened at the first call: a job that is defined and never run opens no connection.
  let pool: pg.Pool | undefined;
  let closed = false;
  // One statement name per query text, so each connection parses and plans it once.
  const statement = `weir_lookup_${shortHash(query)}`;

  const lookup = async (value: T): Promise<R> => {
    if (closed) throw new PostgresLookupError(`${where}: the lookup was closed; query: ${query}`);
    pool ??= openPool(options.connection, poolSize);
    const values = params(value);
    let rows: Record<string, unknown>[];
    try {
      ({ rows } = await pool.query<Record<string, unknown>>({ name: statement, text: query, values }));
    } catch (error) {
      throw new PostgresLookupError(`${where}: query failed for parameters ${JSON.stringify(values)?.slice(0, 200)}: ${reason(error)}; query: ${query}`, { cause: error });
    }
    return result(value, rows);
  };
  return Object.assign(lookup, {
    async close() {
      closed = true;
      await pool?.end();
      pool = undefined;
    },
  });
}
