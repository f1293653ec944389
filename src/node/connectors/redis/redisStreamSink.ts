import { CheckpointCorruptedError, JobDefinitionError } from '../../../core/errors.js';
import type { Json, Sink, SinkWriter } from '../../../core/types.js';
import { closeRedis, connectRedis, serverAway, watchedKeyChanged, type RedisConnection } from './redisConnection.js';

export interface RedisStreamSinkOptions<T> {
  /** `redis://[user:password@]host:port[/db]`; never shown in names or messages. */
  url: string;
  /** The stream (key) a record is appended to. */
  stream: (record: T) => string;
  /** A record's entry fields; by default `{ value: JSON.stringify(record) }`. */
  toFields?: (record: T) => Record<string, string>;
  /**
   * The hash that holds each sink's progress marker (field: the sink's uid, value: the last checkpoint id whose
   * records it appended); `weir:sink-progress` by default. Two jobs whose sinks share a uid need different hashes.
   */
  progressKey?: string;
}

/** The entries one checkpoint appends: `[stream, fields]` pairs. A `type`, so that it is assignable to `Json`. */
type Transaction = { id: number; entries: [string, Record<string, string>][] };

/** What a checkpoint holds: its id, and every transaction not known to be appended yet, oldest first. */
type RedisSinkState = { checkpoint: number; pending: Transaction[] };

/** Entries appended per round trip when the job runs without checkpoints (nothing to wait for). */
const UNCHECKPOINTED_BATCH = 512;

/**
 * An exactly-once sink that appends records to Redis streams (Flink's write-ahead sink). The records between two
 * barriers are held in the sink's checkpoint state; when that checkpoint completes they are appended, with the
 * sink's progress marker (its uid → that checkpoint id), in one `MULTI`/`EXEC` under `WATCH` of the marker. A commit
 * replayed after a crash finds the marker at or past its id and is skipped, so each record is appended once. The
 * marker is read under `WATCH`, so another writer of the same marker between the read and `EXEC` (the previous
 * attempt of this job still finishing a commit) aborts the transaction, which is then read and decided again.
 *
 * A server that is away makes the commit wait in the state: the next checkpoint tries again and fails while the
 * server stays away (counted against `checkpoints.tolerableFailures`), and the first to succeed appends them in order.
 * Restoring the latest checkpoint is exactly-once; restoring an older one appends what followed it again.
 * @example
 * totals.pipe(sinkTo(redisStreamSink({ url: 'redis://127.0.0.1:6379', stream: (t) => `totals:${t.region}` }), { uid: 'totals-out' }))
 */
export function redisStreamSink<T>(options: RedisStreamSinkOptions<T>): Sink<T> {
  const { url, stream, toFields = (record: T) => ({ value: JSON.stringify(record) }), progressKey = 'weir:sink-progress' } = options;
  const name = `redisStreamSink(${progressKey})`;
  if (typeof url !== 'string' || url.length === 0) throw new JobDefinitionError(`${name}: url must be a redis:// URL string`);
  if (typeof stream !== 'function') throw new JobDefinitionError(`${name}: stream must be a function of the record giving its stream key`);
  if (typeof toFields !== 'function') throw new JobDefinitionError(`${name}: toFields must be a function`);

  return {
    name,
    async open({ uid, restoredState, checkpointing }) {
      const client = await connectRedis(url, { queueOffline: false });
      const marker = { key: progressKey, field: uid };
      try {
        if (restoredState === undefined) {
          // A fresh run counts checkpoints from 1 again: a marker left by an earlier run would skip them.
          await client.hDel(marker.key, marker.field);
        } else {
          const state = checkState(restoredState, `sink '${uid}' (${name})`);
          for (const txn of state.pending) await appendOnce(client, marker, txn, `sink '${uid}' (${name})`);
          // Later checkpoints than the restored one may have committed (a restore of an older checkpoint): the ids
          // this attempt takes follow the restored one, so the marker goes back to it.
          await client.hSet(marker.key, marker.field, String(state.checkpoint));
        }
      } catch (error) {
        closeRedis(client);
        throw error;
      }
      return writer(`sink '${uid}' (${name})`, client, marker, checkpointing, (record) => [stream(record), toFields(record)]);
    },
  };
}

interface Marker {
  key: string;
  field: string;
}

function writer<T>(
  where: string,
  client: RedisConnection,
  marker: Marker,
  checkpointing: boolean,
  toEntry: (record: T) => [string, Record<string, string>],
): SinkWriter<T> {
  // Entries written since the last barrier.
  let entries: [string, Record<string, string>][] = [];
  // Transactions snapshotted but not appended yet, oldest first, and the last checkpoint known complete.
  const pending: Transaction[] = [];
  let completed = 0;
  // Redis work runs one task at a time, so transactions are appended in checkpoint order.
  let queue: Promise<unknown> = Promise.resolve();
  const enqueue = <R>(task: () => Promise<R>): Promise<R> => {
    const result = queue.then(task);
    queue = result.catch(() => undefined);
    return result;
  };
  // Appends the transactions of completed checkpoints; a server that is away leaves them pending and throws.
  const appendCompleted = async () => {
    while (pending[0] !== undefined && pending[0].id <= completed) {
      await appendOnce(client, marker, pending[0], where);
      pending.shift();
    }
  };
  // Without checkpoints there is no completion to wait for: entries go out in batches, at least once.
  let failed: Error | undefined;
  const flushUnchecked = () => {
    const batch = entries;
    entries = [];
    return enqueue(() => append(client, batch)).catch((error: unknown) => {
      failed ??= error instanceof Error ? error : new Error(String(error));
    });
  };

  return {
    write(record) {
      if (failed !== undefined) throw failed;
      entries.push(toEntry(record));
      if (!checkpointing && entries.length >= UNCHECKPOINTED_BATCH) void flushUnchecked();
    },
    snapshot(checkpointId) {
      if (entries.length > 0) pending.push({ id: checkpointId, entries });
      entries = [];
      const state: RedisSinkState = { checkpoint: checkpointId, pending: pending.slice() };
      // Commits that met a server away are retried here: while it stays away, this checkpoint fails.
      return enqueue(async () => {
        await appendCompleted();
        return state;
      });
    },
    commit(checkpointId) {
      completed = Math.max(completed, checkpointId);
      return enqueue(appendCompleted).catch((error: unknown) => {
        // The records stay in the state of every later checkpoint until they are appended; only an error the
        // server answered with (a key of another type, say) would fail again, and fails the job.
        if (error instanceof JobDefinitionError) throw error;
        if (!serverAway(error)) {
          throw new JobDefinitionError(
            `${where}: the server refused to append checkpoint ${checkpointId}: ${(error as Error).message}; check that every key the stream function gives is a stream (or absent) and that the user may write it`,
            { cause: error },
          );
        }
      });
    },
    async finish() {
      const rest = entries;
      entries = [];
      await enqueue(async () => {
        completed = Number.POSITIVE_INFINITY;
        await appendCompleted();
        // Written without a marker: nothing follows the end of input, and a restore holds these in no state.
        await append(client, rest);
      });
      if (failed !== undefined) throw failed;
      closeRedis(client);
    },
    async abort() {
      entries = [];
      // Waiting lets the next attempt's recovery run alone.
      await queue;
      closeRedis(client);
    },
  };
}

/**
 * Appends a transaction's entries and moves the marker to its id, in one `MULTI`/`EXEC`, unless the marker shows it
 * appended already. The marker is `WATCH`ed from its read to `EXEC`: a change meanwhile aborts the `EXEC` (a
 * `WatchError`), and the decision is made again on the new value. Redis does not roll a transaction back when one of
 * its commands fails at run time (an `XADD` to a key that holds a string still lets the marker move), so the keys'
 * types are checked in the same window first, and a key of another type fails the job before anything is written.
 */
async function appendOnce(client: RedisConnection, marker: Marker, txn: Transaction, where: string): Promise<void> {
  const keys = [...new Set(txn.entries.map(([stream]) => stream))];
  for (;;) {
    await client.watch(marker.key);
    const [done, ...types] = await Promise.all([client.hGet(marker.key, marker.field), ...keys.map((key) => client.type(key))]);
    if (Number(done ?? 0) >= txn.id) {
      await client.unwatch();
      return;
    }
    const wrong = keys.filter((_, i) => types[i] !== 'stream' && types[i] !== 'none');
    if (wrong.length > 0) {
      await client.unwatch();
      throw new JobDefinitionError(
        `${where}: checkpoint ${txn.id} appends to ${wrong.map((key) => `'${key}'`).join(', ')}, which hold${wrong.length === 1 ? 's' : ''} another type than a stream; ` +
          'delete or rename the key, or make the stream function give other keys, then restore the job',
      );
    }
    const multi = client.multi();
    for (const [stream, fields] of txn.entries) multi.xAdd(stream, '*', fields);
    multi.hSet(marker.key, marker.field, String(txn.id));
    try {
      await multi.exec();
      return;
    } catch (error) {
      if (!watchedKeyChanged(error)) throw error;
    }
  }
}

/** Appends entries in one `MULTI`/`EXEC`, without a marker. */
async function append(client: RedisConnection, entries: [string, Record<string, string>][]): Promise<void> {
  if (entries.length === 0) return;
  const multi = client.multi();
  for (const [stream, fields] of entries) multi.xAdd(stream, '*', fields);
  await multi.exec();
}

/** A restored state is checked before it is acted on. */
function checkState(state: Json, where: string): RedisSinkState {
  const isId = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  const candidate = state as Partial<RedisSinkState> | null;
  const valid =
    candidate !== null &&
    typeof candidate === 'object' &&
    isId(candidate.checkpoint) &&
    Array.isArray(candidate.pending) &&
    candidate.pending.every((txn) => typeof txn === 'object' && txn !== null && isId(txn.id) && Array.isArray(txn.entries));
  if (!valid) throw new CheckpointCorruptedError(`${where}: the checkpoint's sink state is not a redisStreamSink state: ${JSON.stringify(state)?.slice(0, 200)}`);
  return candidate as RedisSinkState;
}
