import { WeirError } from '../../../core/errors.js';

/**
 * A PostgreSQL sink could not open, write or commit: the message names the table, the sink's uid and, for a commit,
 * the checkpoint id; `cause` keeps the server's error. Commits that failed on a lost connection are retried on the
 * next checkpoint's completion or on restore, so this error means the retries ran out or the failure is permanent.
 */
export class PostgresSinkError extends WeirError {
  override name = 'PostgresSinkError';
}

/** A record's row does not fit the sink's table (a column the table lacks, a missing key): names column and table. */
export class PostgresRowError extends WeirError {
  override name = 'PostgresRowError';
}

/** A `postgresLookup` query failed: the message names the query and the key; `cause` keeps the server's error. */
export class PostgresLookupError extends WeirError {
  override name = 'PostgresLookupError';
}
