import { CheckpointCorruptedError, JobDefinitionError, MalformedStreamEntryError } from '../../../core/errors.js';
import type { Json, Source, SourceSplit } from '../../../core/types.js';
import { fromSplits } from '../../../sources/fromSplits.js';
import { closeRedis, connectRedis, type RedisConnection } from './redisConnection.js';
import { entryIdTime, isEntryId, STREAM_START } from './streamEntryId.js';
import { streamSplitReader, type EntryDecoder } from './streamSplitReader.js';

/** A record read from a Redis stream: the parsed entry, where it came from, and its event time. */
export interface RedisStreamEntry<T> {
  /** The stream (key) the entry was read from. */
  readonly stream: string;
  /** The entry's id in that stream. */
  readonly id: string;
  readonly value: T;
  /** Event time in ms: the `timestamp` field or function, else the id's millisecond part. */
  readonly timestamp: number;
}

/** An entry the source could not read, handed to `deadLetter` instead of failing the job. */
export interface RedisDeadLetter {
  readonly stream: string;
  readonly id: string;
  /** The id of the split that read it (the stream key). */
  readonly split: string;
  readonly fields: Record<string, string>;
  /** Why it could not be read: the parse function's error, or a missing or invalid event time. */
  readonly reason: string;
  readonly error: MalformedStreamEntryError;
}

export interface RedisStreamSourceOptions<T> {
  /** `redis://[user:password@]host:port[/db]`; never shown in names or messages. */
  url: string;
  /**
   * The stream keys to read, each one split; or a glob pattern (`orders:*`), matched with `SCAN … TYPE stream` when
   * the job starts (and again at each restart): streams created later are read from the next restart on.
   */
  streams: readonly string[] | string;
  /** An entry's fields as a record; by default the fields themselves. A throw makes the entry malformed. */
  parse?: (fields: Record<string, string>, entry: { stream: string; id: string }) => T;
  /**
   * Event time: the name of a field holding epoch milliseconds or an ISO date, or a function of the parsed value.
   * By default the millisecond part of the entry id (the server's clock at `XADD *`).
   */
  timestamp?: string | ((value: T, entry: { stream: string; id: string }) => number);
  /**
   * Read each stream up to its last entry when the job starts, then end (tests, benches, backfills); by default
   * read on, waiting for new entries.
   */
  bounded?: boolean;
  /** Entries per `XREAD` (`COUNT`), at most; by default the job's chunk size. */
  count?: number;
  /** Milliseconds an unbounded `XREAD` waits for new entries before asking again (`BLOCK`); 1000 by default. */
  block?: number;
  /**
   * Where malformed entries go instead of failing the job, with their reason. It is called again for the same
   * entry when a restore replays it: make it idempotent (an upsert keyed by stream and id) or accept duplicates.
   */
  deadLetter?: (entry: RedisDeadLetter) => void | Promise<void>;
}

/**
 * A replayable source of Redis stream entries, one split per stream key (read side by side by the source's
 * subtasks). Each split's offset is the id of the last entry it read, saved in checkpoints; a restore resumes with
 * `XREAD` after it, so state is exactly-once. Records are `{ stream, id, value, timestamp }`: use
 * `assignTimestamps((e) => e.timestamp)` for event time. A subtask reads its streams side by side (each on a
 * connection of its own), so one subtask can follow several unbounded streams.
 * @example
 * job.source(redisStreamSource({ url: 'redis://127.0.0.1:6379', streams: ['orders:eu', 'orders:us'],
 *   parse: (f) => ({ customer: f.customer!, amount: Number(f.amount) }) }), { uid: 'orders', parallelism: 2 })
 */
export function redisStreamSource<T = Record<string, string>>(options: RedisStreamSourceOptions<T>): Source<RedisStreamEntry<T>> {
  const { url, streams, parse = (fields: Record<string, string>) => fields as T, timestamp, bounded = false, count, block = 1000, deadLetter } = options;
  const name = `redisStreamSource(${typeof streams === 'string' ? streams : streams.join(', ')})`;
  checkSourceOptions(name, options);
  const timeOf = eventTime(timestamp);

  /** How a split's entries become records; a malformed one throws, naming the stream, the id and the split. */
  const decoder = (stream: string): EntryDecoder<RedisStreamEntry<T>> => ({
    decode(id, fields) {
      const entry = { stream, id };
      try {
        const value = parse(fields, entry);
        return { stream, id, value, timestamp: timeOf(value, fields, entry) };
      } catch (cause) {
        const reason = cause instanceof Error ? cause.message : String(cause);
        throw new MalformedStreamEntryError(
          `${name}: entry ${id} of stream '${stream}' (split '${stream}') cannot be read: ${reason}; fix the producer, or give the source a deadLetter function to send such entries on`,
          { stream, id, split: stream, cause },
        );
      }
    },
    ...(deadLetter && {
      deadLetter: (error: MalformedStreamEntryError, fields: Record<string, string>) =>
        deadLetter({ stream, id: error.id, split: stream, fields, reason: error.cause instanceof Error ? error.cause.message : String(error.cause), error }),
    }),
  });

  return fromSplits<RedisStreamEntry<T>>(name, {
    // Streams are a broker's partitions: a subtask follows all of its own at once, unbounded ones included.
    interleaved: true,
    async list() {
      const client = await connectRedis(url, { queueOffline: true });
      try {
        const keys = typeof streams === 'string' ? await matchingStreams(client, streams) : streams;
        const listed: SourceSplit[] = [];
        // The end is taken here, once per attempt: a restore reads up to the streams' last entries then.
        for (const stream of keys) listed.push({ id: stream, description: { stream, end: bounded ? await lastEntryId(client, stream) : null } });
        return listed;
      } finally {
        closeRedis(client);
      }
    },
    open(split, { restoredOffset, uid }) {
      const { stream, end } = split.description as { stream: string; end: string | null };
      return streamSplitReader(
        { source: name, url, stream, after: restoredId(restoredOffset, `source '${uid}' (${name})`, stream), end: end ?? undefined, count: count ?? Number.POSITIVE_INFINITY, block },
        decoder(stream),
      );
    },
  });
}

function checkSourceOptions<T>(name: string, { url, streams, count, block, parse, timestamp, deadLetter }: RedisStreamSourceOptions<T>): void {
  const invalid = (what: string) => new JobDefinitionError(`${name}: ${what}`);
  if (typeof url !== 'string' || url.length === 0) throw invalid('url must be a redis:// URL string');
  if (typeof streams === 'string' ? streams.length === 0 : !Array.isArray(streams) || streams.length === 0 || !streams.every((s) => typeof s === 'string' && s.length > 0)) {
    throw invalid('streams must be a non-empty list of stream keys, or a key pattern');
  }
  if (typeof streams !== 'string' && new Set(streams).size !== streams.length) throw invalid('streams names a stream twice');
  if (count !== undefined && !(Number.isInteger(count) && count >= 1)) throw invalid(`count must be an integer ≥ 1, got ${String(count)}`);
  if (block !== undefined && !(Number.isInteger(block) && block >= 1)) throw invalid(`block must be an integer number of ms ≥ 1, got ${String(block)}`);
  if (parse !== undefined && typeof parse !== 'function') throw invalid('parse must be a function');
  if (timestamp !== undefined && typeof timestamp !== 'string' && typeof timestamp !== 'function') throw invalid('timestamp must be a field name or a function');
  if (deadLetter !== undefined && typeof deadLetter !== 'function') throw invalid('deadLetter must be a function');
}

/** How an entry's event time is found; a missing or invalid one throws, which makes the entry malformed. */
function eventTime<T>(
  timestamp: RedisStreamSourceOptions<T>['timestamp'],
): (value: T, fields: Record<string, string>, entry: { stream: string; id: string }) => number {
  if (timestamp === undefined) return (_value, _fields, { id }) => entryIdTime(id);
  const valid = (time: number, what: string) => {
    if (!Number.isFinite(time)) throw new RangeError(`its event time ${what} is not a time`);
    return time;
  };
  if (typeof timestamp === 'function') {
    return (value, _fields, entry) => {
      const time = timestamp(value, entry);
      return valid(time, String(time));
    };
  }
  return (_value, fields) => {
    const raw = fields[timestamp];
    if (raw === undefined) throw new RangeError(`it has no field '${timestamp}' for its event time`);
    // Epoch milliseconds, or a date string (ISO 8601).
    return valid(/^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : Date.parse(raw), `field '${timestamp}' = ${JSON.stringify(raw)}`);
  };
}

/** The stream keys that match `pattern`, sorted, so that splits are listed in the same order by every attempt. */
async function matchingStreams(client: RedisConnection, pattern: string): Promise<string[]> {
  const keys = new Set<string>();
  for await (const batch of client.scanIterator({ MATCH: pattern, TYPE: 'stream', COUNT: 1000 })) for (const key of batch) keys.add(key);
  return [...keys].sort();
}

/** The id of a stream's last entry, `0-0` for an empty or missing stream. */
async function lastEntryId(client: RedisConnection, stream: string): Promise<string> {
  const [last] = (await client.xRevRange(stream, '+', '-', { COUNT: 1 })) ?? [];
  return last?.id ?? STREAM_START;
}

/** A split's saved offset, checked: a checkpoint must hold an entry id there. */
function restoredId(offset: Json | undefined, where: string, stream: string): string {
  if (offset === undefined) return STREAM_START;
  if (!isEntryId(offset)) {
    throw new CheckpointCorruptedError(`${where}: the checkpoint holds ${JSON.stringify(offset)} as the offset of stream '${stream}', which is not a stream entry id`);
  }
  return offset;
}
