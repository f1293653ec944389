import { checkOptions } from '../../../core/checkOptions.js';
import { JobDefinitionError } from '../../../core/errors.js';
import type { Sink } from '../../../core/sink.js';
import type { Json } from '../../../core/values.js';
import { openPool, reason, shortHash, type PostgresConnection } from './postgresConnection.js';
import { PostgresRowError, PostgresSinkError } from './postgresErrors.js';
import { checkColumns, rowMaker } from './postgresRows.js';
import { postgresTable, tableColumns, type PostgresTable, type Queryable } from './postgresTable.js';
import type { SinkSetup } from './sinkSetup.js';
import { openPreparedWriter } from './preparedWriter.js';
import { openWriteAheadWriter } from './writeAheadWriter.js';

/** Options of `postgresSink`. */
export interface PostgresSinkOptions<T> {
  /** A `postgres://` URL or node-postgres pool options. Never logged nor put in error messages. */
  connection: PostgresConnection;
  /** The target table, `name` or `schema.name`; the progress table `weir_sink_progress` is created beside it. */
  table: string;
  /** The columns the sink writes, in the order of each row. */
  columns: readonly string[];
  /** `append` (INSERT every row, the default) or `upsert` (INSERT … ON CONFLICT (key) DO UPDATE). */
  mode?: 'append' | 'upsert';
  /** The upsert key: columns of a unique constraint or primary key of the table. Required by `upsert`. */
  key?: readonly string[];
  /** A record's row as `{ column: value }`; the record itself by default. Values must be JSON (dates as ISO strings). */
  toRow?: (value: T) => Record<string, Json>;
  /**
   * `write-ahead` (the default; Flink's GenericWriteAheadSink): a checkpoint keeps its rows in its state, and its
   * completion writes them and the sink's progress row in one transaction. `prepared`: each checkpoint's rows are
   * written at the barrier in a transaction left prepared (`PREPARE TRANSACTION`), committed on completion; the
   * checkpoint keeps only ids. `prepared` needs a server with `max_prepared_transactions` > 0.
   */
  transactions?: 'write-ahead' | 'prepared';
  /** Rows per INSERT statement (fewer when the columns × rows would pass PostgreSQL's 65,535 parameters). Default 500. */
  batchSize?: number;
  /**
   * Commits in a row that may fail on a lost connection before the job fails (default 3): a failed commit is retried
   * with the next checkpoint's, its rows kept in the checkpoints meanwhile.
   */
  tolerableCommitFailures?: number;
}

const KNOWN = ['connection', 'table', 'columns', 'mode', 'key', 'toRow', 'transactions', 'batchSize', 'tolerableCommitFailures'];

/**
 * An exactly-once PostgreSQL sink, for `sinkTo`. Rows reach the table only when the checkpoint after them completes,
 * each checkpoint's rows in one transaction with the sink's progress row (job, sink uid, checkpoint id) in
 * `weir_sink_progress`: a commit replayed after a crash or restore finds its checkpoint there and is skipped, so a
 * restore from the latest checkpoint writes every row exactly once. See `PostgresSinkOptions.transactions` for the
 * two-phase mode.
 * @example
 * totals.pipe(sinkTo(postgresSink({
 *   connection: 'postgres://app@127.0.0.1/shop', table: 'totals', mode: 'upsert', key: ['customer'],
 *   columns: ['customer', 'total'], toRow: (t) => ({ customer: t.customer, total: t.sum }),
 * }), { uid: 'totals-out' }));
 */
export function postgresSink<T>(options: PostgresSinkOptions<T>): Sink<T> {
  const name = `postgresSink(${options?.table})`;
  checkOptions(name, options, KNOWN);
  const settings = checkSettings(name, options);
  return {
    name,
    async open({ uid, restoredState, checkpointing, job = '' }) {
      // Each attempt's connections carry the sink's name and an attempt nonce: the two-phase writer waits at open
      // until an earlier attempt's backends are gone (see `openPreparedWriter`).
      const sinkTag = `weir ${shortHash(`${job}\u0000${uid}`)}:`;
      const attempt = `${sinkTag}${Math.random().toString(36).slice(2, 10)}`;
      const pool = openPool(options.connection, 2, attempt);
      try {
        const columns = await tableColumnsOf(pool, settings, uid);
        checkColumns(settings.shape, columns);
        const setup: SinkSetup<T> = { ...settings, pool, job, uid, sinkTag, attempt, makeRow: rowMaker(settings.shape, columns, settings.toRow) };
        const open = settings.transactions === 'prepared' ? openPreparedWriter : openWriteAheadWriter;
        return await open(setup, restoredState, checkpointing);
      } catch (error) {
        await pool.end().catch(() => undefined);
        if (error instanceof PostgresSinkError || error instanceof PostgresRowError) throw error;
        throw new PostgresSinkError(`${name} '${uid}' could not open: ${reason(error)}; check that the server runs and the connection options`, { cause: error });
      }
    },
  };
}

async function tableColumnsOf(pool: Queryable, settings: { shape: { table: PostgresTable } }, uid: string): Promise<string[]> {
  const columns = await tableColumns(pool, settings.shape.table);
  if (columns === undefined) throw new PostgresSinkError(`postgresSink '${uid}': table '${settings.shape.table.name}' does not exist; create it before the job starts`);
  return columns;
}

function checkSettings<T>(name: string, options: PostgresSinkOptions<T>) {
  const fail = (message: string) => new JobDefinitionError(`${name}: ${message}`);
  if (options === null || typeof options !== 'object') throw fail('options are required: connection, table, columns');
  const { mode = 'append', key, columns, transactions = 'write-ahead', batchSize = 500, tolerableCommitFailures = 3 } = options;
  if (options.connection === undefined) throw fail('connection is required (a postgres:// URL or pool options)');
  if (typeof options.table !== 'string') throw fail('table is required (name or schema.name)');
  if (!Array.isArray(columns) || columns.length === 0 || columns.some((c) => typeof c !== 'string')) throw fail('columns must list the column names the sink writes');
  if (mode !== 'append' && mode !== 'upsert') throw fail(`mode must be 'append' or 'upsert', got ${JSON.stringify(mode)}`);
  if (mode === 'upsert' && (!Array.isArray(key) || key.length === 0)) throw fail("mode 'upsert' needs key: the columns of a unique constraint");
  if (mode === 'append' && key !== undefined) throw fail("key is only for mode 'upsert'");
  for (const column of key ?? []) if (!columns.includes(column)) throw fail(`key column '${column}' must be one of columns`);
  if (transactions !== 'write-ahead' && transactions !== 'prepared') throw fail(`transactions must be 'write-ahead' or 'prepared', got ${JSON.stringify(transactions)}`);
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw fail(`batchSize must be a positive integer, got ${batchSize}`);
  if (!Number.isSafeInteger(tolerableCommitFailures) || tolerableCommitFailures < 0) throw fail(`tolerableCommitFailures must be an integer ≥ 0, got ${tolerableCommitFailures}`);
  const table = postgresTable(options.table);
  return {
    shape: { table, columns: [...(columns as readonly string[])], key: mode === 'upsert' ? [...key!] : undefined },
    toRow: options.toRow ?? ((value: T) => value as Record<string, Json>),
    transactions,
    batchSize,
    tolerableCommitFailures,
  };
}
