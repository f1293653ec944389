import type pg from 'pg';
import { lazyRequire } from '../../lazyRequire.js';

/** node-postgres, loaded when a connector first uses it, not in every worker thread that imports weir/node. */
export const nodePostgres = lazyRequire<typeof pg>('pg');

/** Where a connector connects: a `postgres://` URL or node-postgres' pool options (credentials included). */
export type PostgresConnection = string | pg.PoolConfig;

/**
 * A pool for `connection`. A connection's own errors (the server restarted, a backend was terminated) are absorbed:
 * node-postgres emits them on the pool for an idle client and on the client for one in use, and an unhandled 'error'
 * event would end the process; the query in flight rejects, and the next one reports the outage where it is handled.
 */
export function openPool(connection: PostgresConnection, max: number, applicationName?: string): pg.Pool {
  const config = typeof connection === 'string' ? { connectionString: connection } : connection;
  // The name is sent at connection (an application_name in a connection URL takes precedence over it).
  const pool = new (nodePostgres().Pool)({ max, ...(applicationName === undefined ? {} : { application_name: applicationName }), ...config });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** A short stable name for a text (FNV-1a, base 36), for identifiers PostgreSQL limits in length. */
export function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(36);
}

/**
 * Whether an error is an outage that a later attempt may not meet: a lost or refused connection, a server shutting
 * down, a deadlock or serialization failure. SQL errors (an unknown column, a constraint) are permanent: retrying
 * the same rows fails the same way.
 */
export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P') || code.startsWith('53') || code.startsWith('40');
}

/** The server's message and SQLSTATE, for an error message; never the connection's options. */
export function reason(error: unknown): string {
  const { message, code } = (error ?? {}) as { message?: unknown; code?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  return typeof code === 'string' ? `${text} (${code})` : text;
}
