import type { JsMsg } from '@nats-io/jetstream';
import { CheckpointCorruptedError, ConnectorError, JobDefinitionError, MalformedRecordError } from '../../../core/errors.js';
import type { Json, Source, SourceSplit } from '../../../core/types.js';
import { fromSplits } from '../../../sources/fromSplits.js';
import { lazyNatsConnection, natsTransport, type NatsConnectOptions } from './natsConnection.js';
import { NATS_BATCH_HEADER, batchJson } from './natsBatch.js';
import { NatsBatchedRecord } from './natsBatchedRecord.js';
import { natsSplitReader, type NatsSplitPosition } from './natsSplitReader.js';

export interface NatsSourceOptions<T> {
  /** The NATS servers, e.g. `'127.0.0.1:4222'`. */
  servers: string | string[];
  /** Everything else the client takes to connect (user, pass, token, tls…): used, never logged. */
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** The JetStream stream to read. */
  stream: string;
  /**
   * The splits: one per subject filter given (a subject or a wildcard of the stream). By default, one per subject
   * the stream holds messages on when the job starts (subjects that appear later are not read).
   */
  subjects?: readonly string[];
  /**
   * Makes a record of a message, `eventTime` being what `timestamp` read from it (undefined without `timestamp`).
   * Throwing marks the message malformed. By default the payload parsed as JSON. A batch's records (`Weir-Batch`,
   * written by `toNats({ batch })`) come one by one as a `NatsBatchedRecord`: the record's payload, its message's rest.
   */
  parse?: (message: JsMsg, eventTime: number | undefined) => T;
  /**
   * Reads a message's event time (from a header or the payload), checked here: a message without a finite time is
   * malformed. weir's records carry their event time from `assignTimestamps` on, so put it in the record in `parse`.
   */
  timestamp?: (message: JsMsg) => number;
  /**
   * Read up to the stream's last sequence when the job (or its latest restart) started, then end (the default);
   * `false` reads on forever. A subtask reads its splits side by side, so one subtask can follow every subject.
   */
  bounded?: boolean;
  /** Messages per pull, at most (1000 by default); a batch of records counts as one. */
  batch?: number;
  /** How long a pull waits when a split has nothing left, in ms (≥ 1000, by default 1000); barriers wait as long. */
  expires?: number;
  /**
   * A subject (of a stream) that malformed messages are published to, with their reason, instead of failing the job.
   * Each carries the headers `Weir-Reason`, `Weir-Stream`, `Weir-Sequence` and `Weir-Split`, and a `Nats-Msg-Id` so that
   * a replay after a restore does not send it twice (within that stream's duplicate window).
   */
  deadLetter?: string;
}

/** What a split covers: a subject filter of the stream, up to `end` (the last sequence at the start) or forever. */
type NatsSplit = { subject: string; end: number | null };

/**
 * A replayable source over a NATS JetStream stream (Flink's FLIP-27 source over a broker): each subject is a split
 * whose offset is the last stream sequence read (or, in the middle of a batch message, its sequence and the records
 * read of it), saved in checkpoints; a restore reads each split again from the position after it, with an ordered consumer, so the job's state counts every message once. The server's ack state
 * plays no part in what is replayed. Bounded by default: it ends at the stream's last sequence when the job started.
 * @example
 * job.source(natsSource({ servers: '127.0.0.1:4222', stream: 'ORDERS', parse: (m) => m.json<Order>() }), { uid: 'orders' })
 */
export function natsSource<T = unknown>(options: NatsSourceOptions<T>): Source<T> {
  const { servers, connection: connectOptions, stream, subjects, timestamp, bounded = true, batch = 1000, expires = 1000, deadLetter } = options;
  const name = `natsSource(${stream})`;
  if (typeof stream !== 'string' || stream === '') throw new JobDefinitionError(`${name}: give the stream to read`);
  if (!(Number.isInteger(batch) && batch >= 1)) throw new JobDefinitionError(`${name}: batch must be an integer ≥ 1, got ${String(batch)}`);
  if (!(Number.isFinite(expires) && expires >= 1000)) throw new JobDefinitionError(`${name}: expires must be ≥ 1000 ms (the client's floor), got ${String(expires)}`);
  if (subjects !== undefined && subjects.length === 0) throw new JobDefinitionError(`${name}: subjects, when given, must list at least one subject`);
  const parse = options.parse ?? ((message: JsMsg) => message.json<T>());
  const connection = lazyNatsConnection({ ...connectOptions, servers });

  const decode = (message: JsMsg): T => {
    if (timestamp === undefined) return parse(message, undefined);
    const time = timestamp(message);
    if (typeof time !== 'number' || !Number.isFinite(time)) throw new MalformedRecordError(`its event time is ${String(time)}, not a finite number of ms`);
    return parse(message, time);
  };
  // A batch's record: its payload parsed as JSON by default, else `parse` and `timestamp` take it as a message of its own.
  const decodeBatched =
    options.parse === undefined && timestamp === undefined
      ? (_message: JsMsg, payload: string) => JSON.parse(payload) as T
      : (message: JsMsg, payload: string, index: number) => decode(new NatsBatchedRecord(message, payload, index));
  // Without them a batch is parsed as one JSON array: one parse per message rather than a string and a parse per record.
  const decodeBatch = options.parse === undefined && timestamp === undefined ? (message: JsMsg) => batchJson(message) as T[] | undefined : undefined;

  const source = fromSplits<T>(name, {
    // Subjects are a broker's partitions: a subtask follows all of its own at once, unbounded ones included.
    interleaved: true,
    async list() {
      const { jsm } = await connection.get();
      const info = await jsm.streams.info(stream, subjects === undefined ? { subjects_filter: '>' } : undefined).catch((cause: unknown) => {
        throw new ConnectorError(`${name}: cannot read the info of stream '${stream}': ${String(cause)}; create the stream first`, { cause });
      });
      const end = bounded ? info.state.last_seq : null;
      const listed = subjects ?? Object.keys(info.state.subjects ?? {}).sort();
      return listed.map((subject): SourceSplit => ({ id: subject, description: { subject, end } satisfies NatsSplit }));
    },
    async open(split, { restoredOffset }) {
      const { js } = await connection.get();
      const { subject, end } = split.description as NatsSplit;
      return natsSplitReader({
        js,
        name,
        stream,
        subject,
        after: position(restoredOffset ?? 0, name, subject),
        end,
        batch,
        expires,
        decode,
        decodeBatched,
        decodeBatch,
        deadLetter: deadLetter === undefined ? undefined : async (message, reason, record) => {
          const sent = (await natsTransport.load()).headers();
          for (const [key, values] of message.headers ?? []) for (const value of values) if (key !== NATS_BATCH_HEADER) sent.append(key, value);
          sent.set('Weir-Reason', reason);
          sent.set('Weir-Stream', stream);
          sent.set('Weir-Sequence', String(message.seq));
          sent.set('Weir-Split', subject);
          // A batch's record goes on alone, named by its index; a whole message keeps its headers, batch or not.
          if (record !== undefined) sent.set('Weir-Record', String(record.index));
          else if (message.headers?.has(NATS_BATCH_HEADER)) sent.set(NATS_BATCH_HEADER, message.headers.get(NATS_BATCH_HEADER));
          const what = record === undefined ? `message ${message.seq}` : `record ${record.index} of message ${message.seq}`;
          const payload = record === undefined ? message.data : record.payload;
          const msgID = record === undefined ? `${stream}/${message.seq}` : `${stream}/${message.seq}/${record.index}`;
          await js.publish(deadLetter, payload, { headers: sent, msgID }).catch((cause: unknown) => {
            throw new ConnectorError(`${name}: cannot publish ${what} of split '${subject}' to the dead letter subject '${deadLetter}': ${String(cause)}; the subject must belong to a stream`, { cause });
          });
        },
      });
    },
  });
  return { ...source, ended: () => void connection.close() };
}

/** A split's saved offset: the last stream sequence read, or `[sequence, records]` in the middle of a batch. */
function position(offset: Json, name: string, subject: string): NatsSplitPosition {
  const natural = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (natural(offset)) return { sequence: offset, records: 0 };
  if (Array.isArray(offset) && offset.length === 2 && natural(offset[0]) && offset[0] >= 1 && natural(offset[1]) && offset[1] >= 1) {
    return { sequence: offset[0] - 1, records: offset[1] };
  }
  throw new CheckpointCorruptedError(
    `${name}: the checkpoint holds offset ${JSON.stringify(offset)} for split '${subject}', which is neither a stream sequence nor [sequence, records read of its batch]`,
  );
}
