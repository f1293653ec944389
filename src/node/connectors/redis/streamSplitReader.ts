import { JobDefinitionError, MalformedStreamEntryError } from '../../../core/errors.js';
import type { SourceReader } from '../../../core/types.js';
import { closeRedis, connectRedis, serverAway, type RedisConnection } from './redisConnection.js';
import { compareEntryIds } from './streamEntryId.js';

/** Where a split reader reads: one stream, after `after`, up to `end` (inclusive) when bounded. */
export interface StreamSplitRange {
  /** The source, as messages name it. */
  readonly source: string;
  readonly url: string;
  readonly stream: string;
  /** The id of the last entry already read (`0-0`: none). */
  readonly after: string;
  /** The last entry to read; undefined: read on, waiting for entries (`XREAD BLOCK`). */
  readonly end: string | undefined;
  /** Entries asked for per `XREAD`, at most; the engine's `max` caps it further. */
  readonly count: number;
  /** Milliseconds one `XREAD` waits for entries in unbounded mode. */
  readonly block: number;
}

/**
 * How a raw entry becomes a record: `decode` throws a `MalformedStreamEntryError` for an entry it cannot read, which
 * `deadLetter` (when given) takes instead of the read failing. Synchronous, so the read path costs no promise per entry.
 */
export interface EntryDecoder<R> {
  readonly decode: (id: string, fields: Record<string, string>) => R;
  readonly deadLetter?: (error: MalformedStreamEntryError, fields: Record<string, string>) => void | Promise<void>;
}

/** An entry as `XREAD` returns it. */
interface StreamMessage {
  id: string;
  message: Record<string, string>;
}

/** A retry after the server went away waits this long, so that a client still reconnecting is not hammered. */
const RETRY_MS = 50;

/**
 * Reads one Redis stream with `XREAD` from the saved id, on a connection of its own (an unbounded `XREAD BLOCK`
 * holds its connection, so readers cannot share one). Its offset is the id of the last entry it returned, so a
 * restore resumes exactly after it. A read that meets a server that went away is retried from the same id: the
 * client queues it until it reconnects, barriers pass meanwhile (the engine does not wait for a pending read), and
 * nothing is skipped or read twice.
 * @example const reader = streamSplitReader({ url, stream: 'orders', after: '0-0', end: undefined, count: 512, block: 1000 }, decode)
 */
export function streamSplitReader<R>(range: StreamSplitRange, { decode, deadLetter }: EntryDecoder<R>): SourceReader<R> {
  const { source, url, stream, end, count, block } = range;
  // The id of the last entry returned by `read` (or skipped as malformed): the offset a checkpoint saves.
  let last = range.after;
  let client: Promise<RedisConnection> | undefined;
  let closed = false;
  let done = end !== undefined && compareEntryIds(last, end) >= 0;

  const fetch = async (max: number) => {
    for (;;) {
      try {
        const connection = await (client ??= connectRedis(url, { queueOffline: true }));
        const options = end === undefined ? { COUNT: Math.min(count, max), BLOCK: block } : { COUNT: Math.min(count, max) };
        return await connection.xRead({ key: stream, id: last }, options);
      } catch (error) {
        if (closed) return null;
        // The server answered with an error (WRONGTYPE, NOPERM): every retry and restart would meet it again.
        if (!serverAway(error)) {
          throw new JobDefinitionError(
            `${source}: the server refused XREAD of stream '${stream}': ${(error as Error).message}; check that '${stream}' is a stream and that the user may read it`,
            { cause: error },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  };

  const close = async () => {
    if (closed) return;
    closed = true;
    closeRedis(await client?.catch(() => undefined));
  };

  return {
    async read(max) {
      if (done || closed) {
        await close();
        return null;
      }
      const reply = await fetch(max);
      if (closed) return [];
      const entries: readonly StreamMessage[] = (reply as readonly { messages: StreamMessage[] }[] | null)?.[0]?.messages ?? [];
      // Bounded, and nothing after `last`: the entries up to `end` were trimmed away, so the split is read.
      if (entries.length === 0 && end !== undefined) done = true;
      const records: R[] = [];
      // The offset moves only when the records are returned: a barrier may go out while a dead letter is being
      // sent, and its offset must not cover records that reach the flow after it.
      let consumed = last;
      // Entries come in id order: only a batch whose last entry passes `end` needs a look at each id.
      const crossesEnd = end !== undefined && entries.length > 0 && compareEntryIds(entries[entries.length - 1]!.id, end) > 0;
      for (const { id, message } of entries) {
        if (crossesEnd && compareEntryIds(id, end) > 0) {
          done = true;
          break;
        }
        try {
          records.push(decode(id, message));
        } catch (error) {
          if (deadLetter === undefined || !(error instanceof MalformedStreamEntryError)) throw error;
          await deadLetter(error, message);
        }
        consumed = id;
      }
      last = consumed;
      if (end !== undefined && compareEntryIds(last, end) >= 0) done = true;
      return records;
    },
    offset: () => last,
    close,
  };
}
