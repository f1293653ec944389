import type pg from 'pg';
import { CheckpointCorruptedError } from '../../../core/errors.js';
import type { SinkWriter } from '../../../core/sink.js';
import type { Json } from '../../../core/values.js';
import { isTransient, reason } from './postgresConnection.js';
import { PostgresSinkError } from './postgresErrors.js';
import { insertRows, latestPerKey, type Row } from './postgresRows.js';
import { ensureProgressTable } from './postgresTable.js';
import { serialQueue, sinkName, type SinkSetup } from './sinkSetup.js';

/** The rows of one checkpoint, kept until a transaction wrote them. A `type`, so it is assignable to `Json`. */
type Batch = { id: number; rows: Row[] };

/** What a checkpoint holds: every batch not known to be committed, oldest first. */
type WriteAheadState = { pending: Batch[] };

/**
 * The write-ahead writer (Flink's GenericWriteAheadSink). The barrier moves the rows since the last one into the
 * checkpoint's state; the checkpoint's completion commits, in ONE transaction, every pending batch and the progress
 * row (job, sink uid, highest checkpoint id written). The transaction first reads that row under a lock and skips the
 * batches it already covers: a replayed commit (the restored checkpoint's own batches, or a commit whose COMMIT
 * reached the server but whose answer was lost) writes nothing twice. A commit lost to an outage keeps its batches
 * pending: the next completion, or the restore, commits them with its own.
 */
export async function openWriteAheadWriter<T>(setup: SinkSetup<T>, restoredState: Json | undefined, checkpointing: boolean): Promise<SinkWriter<T>> {
  const { pool, job, uid, shape, batchSize } = setup;
  const name = sinkName(setup);
  const progress = shape.table.progressSql;
  await ensureProgressTable(pool, shape.table);
  const pending: Batch[] = restoredState === undefined ? [] : checkState(restoredState, name, shape.columns.length);
  // Rows since the last barrier.
  let buffer: Row[] = [];
  // Commits that failed on an outage in a row: past `tolerableCommitFailures`, the job fails.
  let failures = 0;
  // Without checkpoints rows are written as they fill a batch; a failure is reported by the next write or finish.
  let unflushed: Error | undefined;
  const enqueue = serialQueue();

  /** Writes `batches` not yet covered by the progress row, then `tail`, in one transaction. */
  const transaction = async (batches: readonly Batch[], tail: readonly Row[]): Promise<void> => {
    const client = await pool.connect();
    let failed: unknown;
    try {
      await client.query('BEGIN');
      const last = batches.length === 0 ? 0 : await committedCheckpoint(client);
      // One list, so that an upsert writes each key once for the whole transaction.
      const rows: Row[] = [];
      for (const batch of batches) if (batch.id > last) for (const row of batch.rows) rows.push(row);
      for (const row of tail) rows.push(row);
      if (rows.length > 0) await insertRows(client, shape, rows, batchSize);
      const top = batches.at(-1)?.id;
      if (top !== undefined && top > last) {
        await client.query(
          `INSERT INTO ${progress} (job, sink, checkpoint) VALUES ($1, $2, $3)
           ON CONFLICT (job, sink) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, committed_at = now()`,
          [job, uid, top],
        );
      }
      await client.query('COMMIT');
    } catch (error) {
      failed = error;
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      // A client whose connection broke is discarded, not returned to the pool.
      client.release(failed !== undefined && isTransient(failed));
    }
  };
  const committedCheckpoint = async (client: pg.PoolClient): Promise<number> => {
    const { rows } = await client.query<{ checkpoint: string }>(`SELECT checkpoint FROM ${progress} WHERE job = $1 AND sink = $2 FOR UPDATE`, [job, uid]);
    return rows.length === 0 ? 0 : Number(rows[0]!.checkpoint);
  };
  /** Commits the pending batches up to checkpoint `id`; they leave `pending` only once the transaction committed. */
  const commitUpTo = async (id: number): Promise<void> => {
    const due = pending.filter((batch) => batch.id <= id);
    if (due.length === 0) return;
    await transaction(due, []);
    // Batches are pushed in id order and committed one transaction at a time, so `due` is a prefix of `pending`.
    pending.splice(0, due.length);
  };
  const commitError = (error: unknown, id: number | undefined) =>
    new PostgresSinkError(
      `${name}: the commit of checkpoint ${id ?? 'at the end of input'} failed: ${reason(error)}` +
        (isTransient(error) ? `; ${failures} commits failed in a row (tolerableCommitFailures ${setup.tolerableCommitFailures}); a restore from the latest checkpoint commits its rows once the server is back` : '; fix the table or the rows, then restore: the rows are kept in the checkpoint'),
      { cause: error },
    );

  if (restoredState === undefined) {
    // A fresh run: ids restart with the checkpoint storage, so a progress row left by an earlier run means nothing.
    await pool.query(`DELETE FROM ${progress} WHERE job = $1 AND sink = $2`, [job, uid]);
  } else {
    // The restored checkpoint completed: its batches are due. An outage leaves them pending for the next completion.
    await commitUpTo(Number.MAX_SAFE_INTEGER).catch((error: unknown) => {
      if (!isTransient(error)) throw commitError(error, pending.at(-1)?.id);
      failures++;
    });
  }

  return {
    write(value) {
      if (unflushed !== undefined) throw commitError(unflushed, undefined);
      buffer.push(setup.makeRow(value));
      if (!checkpointing && buffer.length >= batchSize) {
        const rows = buffer;
        buffer = [];
        enqueue(() => transaction([], rows)).catch((error: unknown) => (unflushed ??= error instanceof Error ? error : new Error(String(error))));
      }
    },
    snapshot(checkpointId) {
      // An upsert's checkpoint keeps each key's last row only: the earlier ones would be overwritten in its commit.
      if (buffer.length > 0) pending.push({ id: checkpointId, rows: shape.key ? latestPerKey(shape, buffer) : buffer });
      buffer = [];
      const state: WriteAheadState = { pending: pending.map((batch) => ({ ...batch })) };
      return state;
    },
    commit(checkpointId) {
      return enqueue(async () => {
        try {
          await commitUpTo(checkpointId);
          failures = 0;
        } catch (error) {
          if (isTransient(error) && ++failures <= setup.tolerableCommitFailures) return;
          throw commitError(error, checkpointId);
        }
      });
    },
    async finish() {
      const rows = buffer;
      buffer = [];
      try {
        await enqueue(async () => {
          if (unflushed !== undefined) throw unflushed;
          await transaction(pending.splice(0), rows);
        });
      } catch (error) {
        throw commitError(error, undefined);
      } finally {
        await pool.end().catch(() => undefined);
      }
    },
    async abort() {
      buffer = [];
      // Pending batches are in the checkpoints: a restore commits those that completed.
      await enqueue(() => pool.end()).catch(() => undefined);
    },
  };
}

/** A restored state is checked before its rows are written: rows of another column count would go to wrong columns. */
function checkState(state: Json, name: string, width: number): Batch[] {
  const candidate = state as Partial<WriteAheadState> | null;
  const valid =
    candidate !== null && typeof candidate === 'object' && Array.isArray(candidate.pending) &&
    candidate.pending.every((batch) => batch !== null && typeof batch === 'object' && Number.isSafeInteger(batch.id) && Array.isArray(batch.rows));
  if (!valid) throw new CheckpointCorruptedError(`${name}: the checkpoint's sink state is not a postgresSink write-ahead state: ${JSON.stringify(state)?.slice(0, 200)}`);
  const batches = candidate.pending!;
  for (const batch of batches) {
    const bad = batch.rows.find((row) => !Array.isArray(row) || row.length !== width);
    if (bad !== undefined) {
      throw new PostgresSinkError(`${name}: checkpoint rows of ${Array.isArray(bad) ? bad.length : '?'} columns do not fit the sink's ${width} columns; restore with the columns the job was checkpointed with`);
    }
  }
  return batches.map((batch) => ({ id: batch.id, rows: batch.rows }));
}
