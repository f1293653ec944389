import { setTimeout as delay } from 'node:timers/promises';
import type { Consumer, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { ConnectorError, MalformedRecordError } from '../../../core/errors.js';
import type { SourceReader } from '../../../core/types.js';
import { NATS_BATCH_HEADER, batchRecords } from './natsBatch.js';
import { natsJetStream } from './natsConnection.js';

/** Where a split's reading resumes: after every record of the messages up to `sequence`, and `records` of the next. */
export interface NatsSplitPosition {
  readonly sequence: number;
  /** Records of message `sequence + 1` (a batch) already read: a checkpoint taken in the middle of a batch. */
  readonly records: number;
}

/** What a split reader needs: where to read, from where, up to where, and how a message becomes records. */
export interface NatsSplitReading<T> {
  readonly js: JetStreamClient;
  /** `natsSource(stream)`, for messages. */
  readonly name: string;
  readonly stream: string;
  /** The split's subject filter (its id). */
  readonly subject: string;
  /** Where the reader starts: the position a checkpoint saved. */
  readonly after: NatsSplitPosition;
  /** The stream's last sequence when the job started: the split ends there. `null`: it never ends. */
  readonly end: number | null;
  /** Messages per pull, at most. */
  readonly batch: number;
  /** How long one pull waits for messages when none are there (ms, ≥ 1000: the client's floor). */
  readonly expires: number;
  /** The record of a message of one record. */
  readonly decode: (message: JsMsg) => T;
  /** The record of a batch message's record `index`, whose payload is `payload`. */
  readonly decodeBatched: (message: JsMsg, payload: string, index: number) => T;
  /**
   * Every record of a batch message at once, when records need no more than their payload (no custom `parse`):
   * undefined when that fails, and the records are then decoded one by one by `decodeBatched`.
   */
  readonly decodeBatch: ((message: JsMsg) => T[] | undefined) | undefined;
  /**
   * Sends a message (or, with `record`, one record of a batch) that cannot be decoded on, with its reason; without
   * it such a message fails the job.
   */
  readonly deadLetter: ((message: JsMsg, reason: string, record?: { index: number; payload: string }) => Promise<void>) | undefined;
}

/** A message pulled and not yet handed to the engine in full. */
interface Fetched<T> {
  readonly message: JsMsg;
  /** How many records it holds, by its header (1 without one). */
  readonly count: number;
  /** Its records' payloads once split (a batch), `null` for a message of one record, undefined before it is looked at. */
  records: string[] | null | undefined;
  /** Its records, decoded at once by `decodeBatch` (a batch), undefined otherwise. */
  values: T[] | undefined;
  /** How many of its records were handed out. */
  next: number;
}

/**
 * Messages a pull asks for at least (when the split holds that many). A pull costs the client a few hundred µs of CPU
 * whatever it brings (a subscription, a request, timers, the wake-ups around it): with batches of 1,000 records a
 * pull of one message spent ~0.3 µs per record on pulls alone, about as much as parsing the records.
 */
const PULL_FLOOR = 32;

/**
 * Reads one subject of a stream with an ordered consumer (JetStream's own gap-free reader: no acks, and it recreates
 * itself at the next sequence when a delivery is missed), starting after the position a checkpoint saved. What is
 * replayed is decided here, by `opt_start_seq`, never by the server's ack bookkeeping.
 *
 * A message holds one record, or several (a batch, `NATS_BATCH_HEADER`): pulled messages wait in a queue and are
 * handed out record by record, at most what the engine asks for per read, so a barrier can fall between two records
 * of one message. The offset is then the message's sequence and the records of it read (`[sequence, records]`); at a
 * message's end, the sequence alone. A restore in the middle of a batch starts at that message and skips its records
 * read before.
 *
 * Every pull asks for as many messages as the server said were left (`pending`), capped by `batch` and by what the
 * engine asked for (in messages: records asked for over records per message, as the last pull found them, but at
 * least `PULL_FLOOR`): a pull never waits for messages that are not there, and never brings much more than the job
 * takes (an unbounded pull floods the client and the server cuts it off as a slow consumer). With nothing left it asks for one message and waits up
 * to `expires` for it, so an idle split still returns between reads for barriers. The next pull goes out as soon as
 * fewer than two reads' (or two messages') worth of records are queued, so the round trip overlaps the job's work.
 */
export function natsSplitReader<T>(reading: NatsSplitReading<T>): SourceReader<T> {
  const { js, stream, subject, end, batch, expires } = reading;
  // Every record of the messages up to `last` was handed out; `skip` records of message `last + 1` were too (a
  // restore in the middle of a batch), until that message is pulled and takes them as its `next`.
  let last = reading.after.sequence;
  let skip = reading.after.records;
  // Pulled messages not handed out in full, oldest first; `fetched` is the last sequence pulled.
  const queue: Fetched<T>[] = [];
  let fetched = last;
  // Records per message, as the last pull found them: how many messages a read of `max` records needs.
  let perMessage = 1;
  let consumer: Consumer | undefined;
  // Messages the server holds beyond the last one delivered, for this subject; unknown until the first answer.
  let pending: number | undefined;
  let done = false;
  // Failed pulls in a row, and how long (ms) they may go on failing before the read fails the attempt.
  let failures = 0;
  const patience = 60_000;

  const start = async (): Promise<Consumer> => {
    const { DeliverPolicy } = await natsJetStream.load();
    const opened = await js.consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fetched + 1 });
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
   * One pull of up to `wanted` messages into the queue. A failure of the client's (the server gone, the consumer
   * lost in a server restart) ends the pull with what it brought, and is returned; a pull the server does not end in
   * time (the connection is down: the client then waits for it to come back) is stopped, so that barriers still pass
   * while the server is away.
   */
  const pull = async (current: Consumer, wanted: number): Promise<unknown> => {
    const messages = await current.fetch({ max_messages: wanted, expires });
    const stuck = setTimeout(() => void messages.stop(new ConnectorError(`no answer to a pull within ${2 * expires + 1000} ms`)), 2 * expires + 1000);
    let count = 0;
    let records = 0;
    try {
      for await (const message of messages) {
        if (end !== null && message.seq > end) {
          done = true;
          break;
        }
        pending = message.info.pending;
        fetched = message.seq;
        // The message a restore stopped in: the records it read before are skipped (it may be gone meanwhile:
        // then the consumer started at a later one, whose records are all new).
        const next = skip > 0 && message.seq === last + 1 ? skip : 0;
        skip = 0;
        const held = Number(message.headers?.get(NATS_BATCH_HEADER) || 1) || 1;
        queue.push({ message, count: held, records: undefined, values: undefined, next });
        count++;
        records += held;
      }
    } catch (error) {
      return error;
    } finally {
      clearTimeout(stuck);
      if (count > 0) perMessage = Math.max(1, records / count);
    }
    return undefined;
  };

  /** A message handed out in full: the offset moves past it. */
  const consumed = (): void => {
    last = queue.shift()!.message.seq;
  };

  /**
   * Up to `max` records from the queue, into `records`. Synchronous, unless a record is malformed and goes to the
   * dead letter subject: its publish is awaited before the records after it are handed out.
   */
  const drain = (records: T[], max: number): T[] | Promise<T[]> => {
    while (records.length < max && queue.length > 0) {
      const head = queue[0]!;
      const { message } = head;
      if (head.records === undefined && head.values === undefined && head.count > 1) head.values = reading.decodeBatch?.(message);
      const { values } = head;
      if (values !== undefined) {
        // A batch decoded at once goes out in slices of it: no record is touched one by one here.
        const end = Math.min(values.length, head.next + max - records.length);
        if (records.length === 0) records = values.slice(head.next, end);
        else for (let index = head.next; index < end; index++) records.push(values[index]!);
        head.next = end;
        if (end === values.length) consumed();
        continue;
      }
      let payloads: string[] | null;
      try {
        payloads = head.records ??= batchRecords(message) ?? null;
      } catch (cause) {
        // A batch that is not one (its count and its payload disagree) is malformed as a whole.
        return malformed(message, cause).then(() => (consumed(), drain(records, max)));
      }
      if (payloads === null) {
        if (head.next > 0) {
          consumed();
          continue;
        }
        let record: T;
        try {
          record = reading.decode(message);
        } catch (cause) {
          return malformed(message, cause).then(() => (consumed(), drain(records, max)));
        }
        records.push(record);
        consumed();
        continue;
      }
      while (head.next < payloads.length && records.length < max) {
        const index = head.next;
        let record: T;
        try {
          record = reading.decodeBatched(message, payloads[index]!, index);
        } catch (cause) {
          return malformed(message, cause, { index, payload: payloads[index]! }).then(() => {
            head.next = index + 1;
            if (head.next === payloads.length) consumed();
            return drain(records, max);
          });
        }
        head.next = index + 1;
        records.push(record);
      }
      if (head.next >= payloads.length) consumed();
    }
    return records;
  };

  /** One pull into the queue (none at the end of a bounded split: it closes), failures counted against `patience`. */
  const refill = async (max: number): Promise<void> => {
    let failed: unknown;
    try {
      consumer ??= await start();
      if (end !== null && (pending === 0 || fetched >= end)) {
        await close();
        return;
      }
      const wanted = pending ? Math.min(pending, batch, Math.max(PULL_FLOOR, Math.ceil(max / perMessage))) : 1;
      failed = await pull(consumer, wanted);
      // An empty pull: ask the server what is left, rather than trust a count from before (a restart may have
      // reset the consumer, and a bounded split must not end while messages up to its end remain).
      if (failed === undefined && queue.length === 0 && !done) pending = (await consumer.info()).num_pending;
    } catch (error) {
      if (error instanceof MalformedRecordError || error instanceof ConnectorError) throw error;
      if (streamNotFound(error)) {
        throw new ConnectorError(`${reading.name}: stream '${stream}' does not exist (reading split '${subject}' from sequence ${fetched + 1}); create it, or restore without this checkpoint`, { cause: error });
      }
      failed = error;
    }
    if (failed === undefined) {
      failures = 0;
      return;
    }
    // A fresh consumer from the sequence after the last one pulled: the failed one may have taken messages this
    // reader never got, and would go on after them. The server is given `patience` ms in all to come back before
    // the read fails the attempt.
    void consumer?.delete().catch(() => undefined);
    consumer = undefined;
    if (++failures * expires > patience) {
      throw new ConnectorError(
        `${reading.name}: reading subject '${subject}' of stream '${stream}' failed ${failures} times in a row, the last at sequence ${fetched + 1}: ` +
          `${String((failed as Error)?.message ?? failed)}; the job restarts from its last checkpoint by its restart strategy`,
        { cause: failed },
      );
    }
    // Not at once: a server that refuses at once would use the patience up in a moment.
    if (queue.length === 0) await delay(expires);
  };

  // The pull in flight, if any; its failure is thrown by the read that awaits it.
  let pulling: Promise<void> | undefined;
  const startPull = (max: number): Promise<void> => {
    const started = refill(max).finally(() => {
      if (pulling === started) pulling = undefined;
    });
    pulling = started;
    started.catch(() => undefined);
    return started;
  };
  /** Records queued and not handed out yet (a batch counted by its header until it is split). */
  const queued = (): number => {
    let count = 0;
    for (const entry of queue) count += (entry.values?.length ?? entry.records?.length ?? entry.count) - entry.next;
    return count;
  };
  const handOut = (max: number): T[] | Promise<T[]> => {
    const records = drain([], max);
    // The next pull goes out ahead of need, while the engine works through what is queued (kept at about two reads'
    // or two messages' worth): a split then waits for a round trip to the server only when the job outruns it.
    if (pulling === undefined && !done && queued() < 2 * Math.max(max, perMessage)) void startPull(max);
    return records;
  };

  return {
    // Records already pulled go out at once; the offset moves only as they do, never with a pull, so a barrier that
    // goes out while a pull is in flight does not cover records that reach the flow after it.
    read(asked) {
      const max = Math.max(1, asked);
      if (queue.length > 0) return handOut(max);
      if (pulling === undefined) {
        if (done) return close().then(() => null);
        void startPull(max);
      }
      return pulling!.then(() => (queue.length > 0 ? handOut(max) : done ? close().then(() => null) : []));
    },
    offset() {
      const head = queue[0];
      if (head !== undefined && head.next > 0) return [head.message.seq, head.next];
      return skip > 0 ? [last + 1, skip] : last;
    },
    close,
  };

  /** A message (or a batch's record) that cannot be decoded goes to the dead letter subject, or fails the read. */
  async function malformed(message: JsMsg, cause: unknown, record?: { index: number; payload: string }): Promise<void> {
    const reason = cause instanceof Error ? cause.message : String(cause);
    if (reading.deadLetter) return reading.deadLetter(message, reason, record);
    const what = record === undefined ? `message ${message.seq}` : `record ${record.index} of message ${message.seq}`;
    throw new MalformedRecordError(
      `${reading.name}: ${what} of stream '${stream}' (split '${subject}') cannot be parsed: ${reason}; ` +
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
