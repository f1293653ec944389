import type pg from 'pg';
import { CheckpointCorruptedError } from '../../../core/errors.js';
import type { SinkWriter } from '../../../core/sink.js';
import type { Json } from '../../../core/values.js';
import { isTransient, reason, nodePostgres } from './postgresConnection.js';
import { PostgresSinkError } from './postgresErrors.js';
import { insertRows, type Row } from './postgresRows.js';
import { serialQueue, sinkName, type SinkSetup } from './sinkSetup.js';

/** What a checkpoint holds: its id, and the checkpoints whose prepared transactions were not yet seen committed. */
type PreparedState = { checkpoint: number; prepared: number[] };

/** PostgreSQL's limit on a prepared transaction's identifier. */
const MAX_GID_LENGTH = 200;

/**
 * The two-phase writer (Flink's JDBC exactly-once sink, on PostgreSQL's PREPARE TRANSACTION). Rows go into an open
 * transaction as they fill a batch; the barrier of checkpoint n prepares it as `weir:<job>:<uid>:<n>`, durable on the
 * server but invisible; the completion of n commits it (COMMIT PREPARED). The checkpoint keeps ids only, not rows.
 * On restore from checkpoint n, this sink's prepared transactions of checkpoints ≤ n are committed (their
 * checkpoints completed) and the later ones, of checkpoints that never completed, are rolled back. Commits use
 * other connections than the open transaction: a prepared transaction's row locks could otherwise block the next
 * checkpoint's writes behind its own commit.
 */
export async function openPreparedWriter<T>(setup: SinkSetup<T>, restoredState: Json | undefined): Promise<SinkWriter<T>> {
  const { pool, job, uid, shape, batchSize } = setup;
  const name = sinkName(setup);
  const { rows: settings } = await pool.query<{ max_prepared_transactions: string }>('SHOW max_prepared_transactions');
  if (Number(settings[0]?.max_prepared_transactions ?? 0) === 0) {
    throw new PostgresSinkError(
      `${name}: transactions 'prepared' needs a server with max_prepared_transactions > 0 (this one has 0); ` +
        "set it in postgresql.conf and restart the server, or use transactions: 'write-ahead'",
    );
  }
  const prefix = `weir:${job}:${uid}:`;
  const gid = (id: number) => `${prefix}${id}`;
  if (gid(Number.MAX_SAFE_INTEGER).length > MAX_GID_LENGTH) {
    throw new PostgresSinkError(`${name}: the job name and sink uid are too long for a prepared transaction's identifier (${MAX_GID_LENGTH} characters); shorten them`);
  }
  const restored = restoredState === undefined ? undefined : checkState(restoredState, name);
  await earlierAttemptsGone(setup, name, () => resolvePrepared(pool, prefix, restored?.checkpoint ?? 0));

  // Checkpoints prepared and not yet committed, oldest first.
  const uncommitted: number[] = [];
  // The open transaction of the rows since the last barrier, on its own client.
  let open: pg.PoolClient | undefined;
  let buffer: Row[] = [];
  let failures = 0;
  const writes = serialQueue();
  const commits = serialQueue();
  let writeFailure: Error | undefined;

  // The rows are taken from the buffer when a task is queued, not when it runs: records written after a barrier,
  // while its PREPARE waits in the queue, belong to the next checkpoint's transaction.
  const take = (): Row[] => {
    const rows = buffer;
    buffer = [];
    return rows;
  };
  const flush = async (rows: Row[]): Promise<void> => {
    if (rows.length === 0) return;
    if (open === undefined) {
      open = await pool.connect();
      await open.query('BEGIN');
    }
    await insertRows(open, shape, rows, batchSize);
  };
  const release = (client: pg.PoolClient, broken: boolean) => {
    client.release(broken);
    if (open === client) open = undefined;
  };
  const onWrites = <R>(task: () => Promise<R>): Promise<R> =>
    writes(async () => {
      if (writeFailure !== undefined) throw writeFailure;
      try {
        return await task();
      } catch (error) {
        writeFailure = error instanceof Error ? error : new Error(String(error));
        if (open !== undefined) release(open, true);
        throw error;
      }
    });
  const fail = (error: unknown, what: string) =>
    new PostgresSinkError(`${name}: ${what} failed: ${reason(error)}; a restore from the latest checkpoint resolves its prepared transactions`, { cause: error });
  const commitUpTo = async (id: number): Promise<void> => {
    while (uncommitted[0] !== undefined && uncommitted[0] <= id) {
      await commitPrepared(pool, gid(uncommitted[0]));
      uncommitted.shift();
    }
  };

  return {
    write(value) {
      if (writeFailure !== undefined) throw fail(writeFailure, 'a write');
      buffer.push(setup.makeRow(value));
      if (buffer.length >= batchSize) {
        const rows = take();
        onWrites(() => flush(rows)).catch(() => undefined);
      }
    },
    async snapshot(checkpointId) {
      const rows = take();
      try {
        await onWrites(async () => {
          await flush(rows);
          if (open === undefined) return;
          await open.query(`PREPARE TRANSACTION ${nodePostgres().escapeLiteral(gid(checkpointId))}`);
          release(open, false);
          uncommitted.push(checkpointId);
        });
      } catch (error) {
        throw fail(error, `preparing checkpoint ${checkpointId}`);
      }
      const state: PreparedState = { checkpoint: checkpointId, prepared: [...uncommitted] };
      return state;
    },
    commit(checkpointId) {
      return commits(async () => {
        try {
          await commitUpTo(checkpointId);
          failures = 0;
        } catch (error) {
          if (isTransient(error) && ++failures <= setup.tolerableCommitFailures) return;
          throw fail(error, `the commit of checkpoint ${checkpointId}`);
        }
      });
    },
    async finish() {
      try {
        await commits(() => commitUpTo(Number.MAX_SAFE_INTEGER));
        const rows = take();
        await onWrites(async () => {
          await flush(rows);
          if (open === undefined) return;
          await open.query('COMMIT');
          release(open, false);
        });
      } catch (error) {
        throw fail(error, 'the commit at the end of input');
      } finally {
        await pool.end().catch(() => undefined);
      }
    },
    async abort() {
      buffer = [];
      await writes(async () => {
        if (open === undefined) return;
        await open.query('ROLLBACK').catch(() => undefined);
        release(open, true);
      }).catch(() => undefined);
      // Prepared transactions stay: the restore commits those whose checkpoint completed.
      await commits(() => pool.end()).catch(() => undefined);
    },
  };
}

/** How long an earlier attempt's backends may take to end before the open fails. */
const EARLIER_ATTEMPT_WAIT_MS = 30_000;

/**
 * Resolves the prepared transactions until no backend of an earlier attempt of this sink is left, then once more. A
 * process killed while its PREPARE TRANSACTION was in flight leaves a backend that still completes it: resolving only
 * before it ended would miss that one, which would then hold its row locks (and its identifier) for good. Resolving
 * while waiting matters too: such a backend may itself wait for a row lock of a prepared transaction to resolve.
 */
async function earlierAttemptsGone(setup: Pick<SinkSetup<never>, 'pool' | 'sinkTag' | 'attempt'>, name: string, resolve: () => Promise<void>): Promise<void> {
  const deadline = performance.now() + EARLIER_ATTEMPT_WAIT_MS;
  for (;;) {
    await resolve();
    const { rows } = await setup.pool.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE starts_with(application_name, $1) AND application_name <> $2',
      [setup.sinkTag, setup.attempt],
    );
    if (rows.length === 0) return resolve();
    if (performance.now() > deadline) {
      throw new PostgresSinkError(
        `${name}: another attempt of this sink is still connected (backends ${rows.map((row) => row.pid).join(', ')}); ` +
          'stop the other run of this job, or terminate those backends, then start again',
      );
    }
    await new Promise((wake) => setTimeout(wake, 100));
  }
}

/** Commits this sink's prepared transactions of checkpoints ≤ `completed`, and rolls back the others. */
async function resolvePrepared(pool: pg.Pool, prefix: string, completed: number): Promise<void> {
  const { rows } = await pool.query<{ gid: string }>(
    'SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1) ORDER BY prepared',
    [prefix],
  );
  for (const { gid } of rows) {
    const id = Number(gid.slice(prefix.length));
    if (!Number.isSafeInteger(id)) continue;
    await pool.query(`${id <= completed ? 'COMMIT' : 'ROLLBACK'} PREPARED ${nodePostgres().escapeLiteral(gid)}`);
  }
}

/** COMMIT PREPARED, where one already committed (by an earlier attempt's restore) is done, not an error. */
async function commitPrepared(pool: pg.Pool, gid: string): Promise<void> {
  try {
    await pool.query(`COMMIT PREPARED ${nodePostgres().escapeLiteral(gid)}`);
  } catch (error) {
    if ((error as { code?: string }).code !== '42704') throw error;
  }
}

function checkState(state: Json, name: string): PreparedState {
  const candidate = state as Partial<PreparedState> | null;
  const valid =
    candidate !== null && typeof candidate === 'object' && Number.isSafeInteger(candidate.checkpoint) &&
    Array.isArray(candidate.prepared) && candidate.prepared.every((id) => Number.isSafeInteger(id));
  if (!valid) throw new CheckpointCorruptedError(`${name}: the checkpoint's sink state is not a postgresSink prepared state: ${JSON.stringify(state)?.slice(0, 200)}`);
  return candidate as PreparedState;
}
