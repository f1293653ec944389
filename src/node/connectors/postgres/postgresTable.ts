import type pg from 'pg';
import { nodePostgres } from './postgresConnection.js';

/** A pool or one of its clients: both run a query. */
export type Queryable = pg.Pool | pg.ClientBase;

/** A table as the sink addresses it: its name as given, quoted for SQL, and the schema its progress table lives in. */
export interface PostgresTable {
  /** As the user wrote it, for messages. */
  readonly name: string;
  /** Quoted, schema-qualified when the name was. */
  readonly sql: string;
  /** The progress table beside it (same schema), quoted. */
  readonly progressSql: string;
}

/** The table that records, per job and sink uid, the last checkpoint whose rows are committed. */
export const PROGRESS_TABLE = 'weir_sink_progress';

/** `orders` or `sales.orders`: each part quoted, so mixed case and reserved words are taken literally. */
export function postgresTable(name: string): PostgresTable {
  const parts = name.split('.');
  if (parts.length > 2 || parts.some((part) => part === '')) {
    throw new TypeError(`postgres table '${name}': give a table name or schema.table`);
  }
  const quoted = parts.map((part) => nodePostgres().escapeIdentifier(part));
  const schema = quoted.length === 2 ? `${quoted[0]}.` : '';
  return { name, sql: quoted.join('.'), progressSql: `${schema}${nodePostgres().escapeIdentifier(PROGRESS_TABLE)}` };
}

/** The table's columns in order, or undefined when there is no such table (to_regclass resolves the search_path). */
export async function tableColumns(client: Queryable, table: PostgresTable): Promise<string[] | undefined> {
  const { rows } = await client.query<{ attname: string; exists: boolean }>(
    `SELECT a.attname, true AS exists FROM pg_attribute a
      WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table.sql],
  );
  if (rows.length > 0) return rows.map((row) => row.attname);
  const { rows: found } = await client.query<{ oid: string | null }>('SELECT to_regclass($1)::oid AS oid', [table.sql]);
  return found[0]?.oid === null ? undefined : [];
}

/** Creates the progress table if it is missing; two sinks creating it at once is not an error. */
export async function ensureProgressTable(client: Queryable, table: PostgresTable): Promise<void> {
  try {
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${table.progressSql} (
        job text NOT NULL, sink text NOT NULL, checkpoint bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (job, sink))`,
    );
  } catch (error) {
    // IF NOT EXISTS is not atomic: a concurrent creator makes ours fail on the type's or the table's unique name.
    const code = (error as { code?: string }).code;
    if (code !== '23505' && code !== '42P07') throw error;
  }
}
