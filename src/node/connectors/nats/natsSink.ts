import { randomUUID } from 'node:crypto';
import { CheckpointCorruptedError, ConnectorError, JobDefinitionError } from '../../../core/errors.js';
import type { Flow } from '../../../core/flow.js';
import type { Json, Sink, SinkWriter } from '../../../core/types.js';
import { sinkTo } from '../../../sinks/sinkTo.js';
import { batchLimits, NATS_BATCH_HEADER, packMessages, type NatsBatchLimits, type NatsBatchOptions } from './natsBatch.js';
import { lazyNatsConnection, natsTransport, type LazyNatsConnection, type NatsConnectOptions } from './natsConnection.js';

/** Where a published message sits in the sink's output: what its `Nats-Msg-Id` is made of. */
export interface NatsMessagePosition {
  /** The sink's uid. */
  readonly uid: string;
  /** Drawn when the job starts without a checkpoint, kept by every restore: fresh runs never share ids. */
  readonly run: string;
  /** The checkpoint whose completion publishes the message (`end-<last checkpoint>` for what follows the last one). */
  readonly checkpoint: string;
  /** The record's index among that checkpoint's records (with `batch`, that of the message's first record). */
  readonly index: number;
}

export interface NatsSinkOptions<T> {
  /** The NATS servers, e.g. `'127.0.0.1:4222'`. */
  servers: string | string[];
  /** Everything else the client takes to connect (user, pass, token, tls…): used, never logged. */
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** The subject each record is published to; a JetStream stream must capture it. */
  subject: (record: T) => string;
  /** The message payload of a record; JSON by default. */
  serialize?: (record: T) => string;
  /** The message's `Nats-Msg-Id`; `${uid}/${run}/${checkpoint}/${index}` by default. It must be the same on a replay. */
  msgId?: (position: NatsMessagePosition) => string;
  /** Publishes awaiting their acknowledgement at once, at most (256 by default). */
  inFlight?: number;
  /**
   * Packs each checkpoint's records into messages of several records per subject (a batch: the header
   * `Weir-Batch: <count>`, the payloads joined by newlines), up to `maxRecords` (1000) records and `maxBytes` (256 KiB)
   * each; `natsSource` reads them record by record. Without it, each record is a message of its own.
   */
  batch?: NatsBatchOptions;
}

/**
 * One checkpoint's records, as `[subject, payload]` pairs, held in the checkpoint until it completes. A `type`, not
 * an interface, so it is assignable to `Json`.
 */
type Transaction = { checkpoint: string; records: [string, string][] };

/** The state a checkpoint holds: the run's id and the transactions not yet acknowledged, oldest first. */
type NatsSinkState = { run: string; pending: Transaction[] };

/**
 * An exactly-once sink that publishes each record as one JetStream message, or several records per message with
 * `batch` (a write-ahead sink): the records between two checkpoints are held in the checkpoint at its barrier and
 * published only once it completes, each message with a deterministic `Nats-Msg-Id`, so that the commit a restore
 * repeats is deduplicated by the stream (a batch packs the same records into the same messages again). Exactly once holds
 * while a repeat comes within the stream's `duplicate_window` (2 minutes by default) of the first publish.
 * @example orders.pipe(toNats({ servers: '127.0.0.1:4222', subject: (o) => `totals.${o.customer}` }, { uid: 'totals-out' }))
 */
export function toNats<T>(options: NatsSinkOptions<T>, sinkOptions: { uid?: string } = {}): (input: Flow<T>) => void {
  return sinkTo(natsSink(options), sinkOptions);
}

/**
 * The sink behind `toNats`, for `sinkTo`.
 * @example flow.pipe(sinkTo(natsSink({ servers: '127.0.0.1:4222', subject: () => 'out.all' }), { uid: 'out' }))
 */
export function natsSink<T>(options: NatsSinkOptions<T>): Sink<T> {
  const { servers, connection: connectOptions, subject, serialize = JSON.stringify, inFlight = 256 } = options;
  const name = 'natsSink';
  if (typeof subject !== 'function') throw new JobDefinitionError(`${name}: subject must be a function of the record`);
  if (!(Number.isInteger(inFlight) && inFlight >= 1)) throw new JobDefinitionError(`${name}: inFlight must be an integer ≥ 1, got ${String(inFlight)}`);
  const limits = batchLimits(options.batch, name);
  const connection = lazyNatsConnection({ ...connectOptions, servers });
  return {
    name,
    async open({ uid, restoredState }) {
      const state = restoredState === undefined ? { run: randomUUID().slice(0, 8), pending: [] } : checkState(restoredState, name, uid);
      const msgId = options.msgId ?? ((p: NatsMessagePosition) => `${p.uid}/${p.run}/${p.checkpoint}/${p.index}`);
      const publisher: Publisher = { connection, name: `${name} '${uid}'`, inFlight, limits, msgId: (checkpoint, index) => msgId({ uid, run: state.run, checkpoint, index }) };
      // Finish what the restored checkpoint promised: its transactions were complete, some perhaps not yet published.
      for (const txn of state.pending) await publish(publisher, txn);
      return writer(publisher, state.run, (record) => [subject(record), serialize(record)]);
    },
    ended: () => void connection.close(),
  };
}

interface Publisher {
  readonly connection: LazyNatsConnection;
  /** `natsSink 'uid'`, for messages. */
  readonly name: string;
  readonly inFlight: number;
  readonly limits: NatsBatchLimits;
  readonly msgId: (checkpoint: string, index: number) => string;
}

function writer<T>(publisher: Publisher, run: string, toMessage: (record: T) => [string, string]): SinkWriter<T> {
  // Records written since the last barrier.
  let records: [string, string][] = [];
  // Transactions held by checkpoints not yet completed (or not yet published), oldest first.
  const uncommitted: { id: number; txn: Transaction }[] = [];
  let lastCheckpoint = 0;
  // The newest completed checkpoint, and why publishing its transactions failed (undefined: it did not).
  let completed = 0;
  let failure: unknown;
  // Publishing runs one task at a time, so that a stream's messages keep the order of the checkpoints.
  let queue: Promise<unknown> = Promise.resolve();
  const enqueue = <R>(task: () => Promise<R>): Promise<R> => {
    const result = queue.then(task);
    queue = result.catch(() => undefined);
    return result;
  };
  // Shifted only once published, so that every checkpoint taken meanwhile holds them too.
  const publishCompleted = async (): Promise<void> => {
    while (uncommitted[0] !== undefined && uncommitted[0].id <= completed) {
      await publish(publisher, uncommitted[0].txn);
      uncommitted.shift();
    }
    failure = undefined;
  };

  return {
    write(record) {
      records.push(toMessage(record));
    },
    snapshot(checkpointId) {
      lastCheckpoint = checkpointId;
      if (records.length > 0) uncommitted.push({ id: checkpointId, txn: { checkpoint: String(checkpointId), records } });
      records = [];
      const state: NatsSinkState = { run, pending: uncommitted.map(({ txn }) => txn) };
      if (failure === undefined) return state;
      // The last commit could not publish (the server gone, say): this checkpoint fails unless publishing works now,
      // so an outage fails checkpoints, within `tolerableFailures`, not the job; the records stay held meanwhile.
      return enqueue(async () => {
        if (failure !== undefined) await publishCompleted();
        return state;
      }).catch((cause: unknown) => {
        throw new ConnectorError(
          `${publisher.name}: checkpoint ${checkpointId} fails: the records of checkpoint ${completed} are still not published (${String((cause as Error)?.message ?? cause)}); ` +
            'they are held in the checkpoints and published once the server takes them',
          { cause },
        );
      });
    },
    commit(checkpointId) {
      completed = Math.max(completed, checkpointId);
      // A failed publish does not fail the job here: the next barrier tries again, and fails its checkpoint if it must.
      return enqueue(publishCompleted).catch((cause: unknown) => void (failure = cause));
    },
    finish() {
      // What follows the last checkpoint is published at the end of input under ids named after that checkpoint:
      // a run restored from it replays the same records in the same order, so the same ids.
      const tail: Transaction = { checkpoint: `end-${lastCheckpoint}`, records };
      records = [];
      return enqueue(async () => {
        for (const { txn } of uncommitted.splice(0)) await publish(publisher, txn);
        await publish(publisher, tail);
      });
    },
    async abort() {
      records = [];
      await queue;
    },
  };
}

/**
 * Publishes a transaction's records, packed into messages (one record each without `batch`), each message's id that
 * of its first record, `inFlight` acknowledgements awaited at once, in order of start.
 */
async function publish({ connection, name, inFlight, limits, msgId }: Publisher, txn: Transaction): Promise<void> {
  if (txn.records.length === 0) return;
  const { js } = await connection.get().catch((cause: unknown) => {
    throw new ConnectorError(`${name}: cannot connect to publish checkpoint ${txn.checkpoint}: ${String(cause)}`, { cause });
  });
  const { headers } = await natsTransport.load();
  const messages = packMessages(txn.records, limits);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < messages.length) {
      const { subject, payloads, first } = messages[next++]!;
      let sent: Promise<unknown>;
      if (payloads.length === 1) {
        sent = js.publish(subject, payloads[0], { msgID: msgId(txn.checkpoint, first) });
      } else {
        const batch = headers();
        batch.set(NATS_BATCH_HEADER, String(payloads.length));
        sent = js.publish(subject, payloads.join('\n'), { msgID: msgId(txn.checkpoint, first), headers: batch });
      }
      await sent.catch((cause: unknown) => {
        const what = payloads.length === 1 ? `record ${first}` : `records ${first}…${first + payloads.length - 1} (one message)`;
        throw new ConnectorError(
          `${name}: the publish of ${what} of checkpoint ${txn.checkpoint} to '${subject}' was not acknowledged: ${String(cause)}; ` +
            'a stream must capture the subject; the records stay in the checkpoint and are published again',
          { cause },
        );
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, messages.length) }, lane));
}

/** A restored state is checked before it is acted on. */
function checkState(state: Json, name: string, uid: string): NatsSinkState {
  const candidate = state as Partial<NatsSinkState> | null;
  const valid =
    candidate !== null &&
    typeof candidate === 'object' &&
    typeof candidate.run === 'string' &&
    Array.isArray(candidate.pending) &&
    candidate.pending.every((txn) => typeof txn === 'object' && txn !== null && typeof txn.checkpoint === 'string' && Array.isArray(txn.records));
  if (!valid) throw new CheckpointCorruptedError(`${name} '${uid}': the checkpoint's sink state is not a natsSink state: ${JSON.stringify(state)?.slice(0, 200)}`);
  return candidate as NatsSinkState;
}
