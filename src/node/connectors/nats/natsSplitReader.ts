import { setTimeout as delay } from 'node:timers/promises';
import type { Consumer, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { ConnectorError, MalformedRecordError } from '../../../core/errors.js';
import type { SourceReader } from '../../../core/types.js';
import { natsJetStream } from './natsConnection.js';

/** What a split reader needs: where to read, from where, up to where, and how a message becomes a record. */
export interface NatsSplitReading<T> {
  readonly js: JetStreamClient;
  /** `natsSource(stream)`, for messages. */
  readonly name: string;
  readonly stream: string;
  /** The split's subject filter (its id). */
  readonly subject: string;
  /** The last stream sequence read; the reader starts at the one after it. */
  readonly after: number;
  /** The stream's last sequence when the job started: the split ends there. `null`: it never ends. */
  readonly end: number | null;
  /** Messages per pull, at most. */
  readonly batch: number;
  /** How long one pull waits for messages when none are there (ms, ≥ 1000: the client's floor). */
  readonly expires: number;
  readonly decode: (message: JsMsg) => T;
  /** Sends a message that cannot be decoded on, with its reason; without it such a message fails the job. */
  readonly deadLetter: ((message: JsMsg, reason: string) => Promise<void>) | undefined;
}

/**
 * Reads one subject of a stream with an ordered consumer (JetStream's own gap-free reader: no acks, and it recreates
 * itself at the next sequence when a delivery is missed), starting after the sequence a checkpoint saved. What is
 * replayed is decided here, by `opt_start_seq`, never by the server's ack bookkeeping.
 *
 * Every pull asks for as many messages as the server said were left (`pending`), capped by `batch` and by what the
 * engine asked for: a pull never waits for messages that are not there, and never brings more than the job takes
 * (an unbounded pull floods the client and the server cuts it off as a slow consumer). With nothing left it asks for
 * one message and waits up to `expires` for it, so an idle split still returns between reads for barriers.
 */
export function natsSplitReader<T>(reading: NatsSplitReading<T>): SourceReader<T> {
  const { js, stream, subject, end, batch, expires } = reading;
  // The last sequence returned to the engine: the offset a checkpoint saves.
  let last = reading.after;
  let consumer: Consumer | undefined;
  // Messages the server holds beyond the last one delivered, for this subject; unknown until the first answer.
  let pending: number | undefined;
  let done = false;
  // Failed pulls in a row, and how long (ms) they may go on failing before the read fails the attempt.
  let failures = 0;
  const patience = 60_000;

  const start = async (): Promise<Consumer> => {
    const { DeliverPolicy } = await natsJetStream.load();
    const opened = await js.consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: last + 1 });
    // The info the server answered the creation with: it counts the messages left from the start sequence on.
    pending = (await opened.info(true)).num_pending;
    return opened;
  };

  const close = async (): Promise<void> => {
    done = true;
    const current = consumer;
    consumer = undefined;
    // An ordered consumer is ephemeral: the server would drop it after its inactivity threshold anyway.
    await current?.delete().catch(() => undefined);
  };

  /**
   * One pull of up to `wanted` messages. A failure of the client's (the server gone, the consumer lost in a server
   * restart) ends the pull with what it read, reported as `failed`; errors of this reader's own (a malformed message)
   * are thrown. A pull the server does not end in time (the connection is down: the client then waits for it to come
   * back) is stopped, so that barriers still pass while the server is away.
   */
  const pull = async (current: Consumer, wanted: number): Promise<{ records: T[]; read: number; failed?: unknown }> => {
    const records: T[] = [];
    let read = last;
    let own: unknown;
    const messages = await current.fetch({ max_messages: wanted, expires });
    const stuck = setTimeout(() => void messages.stop(new ConnectorError(`no answer to a pull within ${2 * expires + 1000} ms`)), 2 * expires + 1000);
    try {
      for await (const message of messages) {
        if (end !== null && message.seq > end) {
          done = true;
          break;
        }
        pending = message.info.pending;
        read = message.seq;
        let record: T;
        try {
          record = reading.decode(message);
        } catch (cause) {
          await malformed(message, cause).catch((error: unknown) => {
            own = error;
            throw error;
          });
          continue;
        }
        records.push(record);
      }
    } catch (error) {
      if (error === own) throw error;
      return { records, read, failed: error };
    } finally {
      clearTimeout(stuck);
    }
    return { records, read };
  };

  return {
    async read(max) {
      if (done) return null;
      let result: { records: T[]; read: number; failed?: unknown };
      try {
        consumer ??= await start();
        if (end !== null && (pending === 0 || last >= end)) {
          await close();
          return null;
        }
        result = await pull(consumer, pending ? Math.min(pending, batch, Math.max(1, max)) : 1);
        // An empty pull: ask the server what is left, rather than trust a count from before (a restart may have
        // reset the consumer, and a bounded split must not end while messages up to its end remain).
        if (result.failed === undefined && result.records.length === 0 && !done) pending = (await consumer.info()).num_pending;
      } catch (error) {
        if (error instanceof MalformedRecordError || error instanceof ConnectorError) throw error;
        if (streamNotFound(error)) {
          throw new ConnectorError(`${reading.name}: stream '${stream}' does not exist (reading split '${subject}' from sequence ${last + 1}); create it, or restore without this checkpoint`, { cause: error });
        }
        result = { records: [], read: last, failed: error };
      }
      // Advanced only here: a barrier may go out while this read awaits messages, and its offset must not cover
      // records that reach the flow after it.
      last = result.read;
      if (result.failed !== undefined) {
        // A fresh consumer from the sequence after the last one returned: the failed one may have taken messages
        // this read never yielded, and would go on after them. The server is given `patience` ms in all to come
        // back before the read fails the attempt.
        void consumer?.delete().catch(() => undefined);
        consumer = undefined;
        if (++failures * expires > patience) {
          throw new ConnectorError(
            `${reading.name}: reading subject '${subject}' of stream '${stream}' failed ${failures} times in a row, the last at sequence ${last + 1}: ` +
              `${String((result.failed as Error)?.message ?? result.failed)}; the job restarts from its last checkpoint by its restart strategy`,
            { cause: result.failed },
          );
        }
        // Not at once: a server that refuses at once would use the patience up in a moment.
        if (result.records.length === 0) await delay(expires);
        return result.records;
      }
      failures = 0;
      if (done) await close();
      if (done && result.records.length === 0) return null;
      return result.records;
    },
    offset: () => last,
    close,
  };

  /** A message that cannot be decoded goes to the dead letter subject, or fails the read with an error naming it. */
  async function malformed(message: JsMsg, cause: unknown): Promise<void> {
    const reason = cause instanceof Error ? cause.message : String(cause);
    if (reading.deadLetter) return reading.deadLetter(message, reason);
    throw new MalformedRecordError(
      `${reading.name}: message ${message.seq} of stream '${stream}' (split '${subject}') cannot be parsed: ${reason}; ` +
        "fix the producer, or pass deadLetter: '<subject>' to send such messages there with their reason instead of failing",
      { cause },
    );
  }
}

/** Whether JetStream answered that the stream does not exist (its API, loaded: an answer came from a connection). */
function streamNotFound(error: unknown): boolean {
  const api = natsJetStream.loaded;
  return api !== undefined && error instanceof api.JetStreamApiError && error.code === api.JetStreamApiCodes.StreamNotFound;
}
