import { JobDefinitionError } from '../../core/errors.js';
import type { Flow, KeyedFlow } from '../../core/flow.js';
import type { Key } from '../../core/types.js';
import type { Job } from '../../runtime/job.js';
import type { NatsBatchOptions } from '../connectors/nats/natsBatch.js';
import { lazyNatsConnection, natsJetStream, type NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { toNats } from '../connectors/nats/natsSink.js';
import { natsSource } from '../connectors/nats/natsSource.js';
import { keyGroupPartitions } from './keyGroupPartitions.js';

/** JetStream's own default: how long the stream remembers a message id to drop its repeats. */
export const DEFAULT_DUPLICATE_WINDOW = 120_000;

/** What `task.repartition` takes: where the repartition topic lives, and the new key. */
export interface RepartitionOptions<T> {
  /**
   * The JetStream stream of the repartition topic. Created by the runner when missing, over `<stream>.>` (so one
   * stream holds every topic of a job) with `duplicateWindow`; an existing one must capture `<stream>.<topic>.*`.
   */
  stream: string;
  /** The topic: one subject token. Its partitions are `<stream>.<topic>.<keyGroup>`. */
  topic: string;
  /** The new key: each record is published to its key group's partition and keyed by it again there. */
  key: (record: T) => Key;
  /** The uid of the source reading the topic (its offsets are saved under it); the sink's is `<uid>-out`. The topic by default. */
  uid?: string;
  /** Records per message (`toNats`' batch); `{ maxRecords: 1000 }` by default. */
  batch?: NatsBatchOptions;
  /**
   * The `duplicate_window` of a stream the runner creates, in ms (120 000 by default, JetStream's): a takeover (lease
   * plus restore) must publish a commit's records again within it for the stream to drop the repeats.
   */
  duplicateWindow?: number;
}

/** What a task's repartition needs from its runner. */
export interface RepartitionContext {
  /** The task's job (the one `task.createJob()` made), undefined before it made one. */
  job: Job | undefined;
  /** The task's job name, `<group>-kg<n>`, for messages. */
  name: string;
  keyGroup: number;
  maxParallelism: number;
  servers: string | string[];
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** `task.keyBy`: keys checked against the task's key group. */
  keyBy: <T>(selector: (value: T) => Key) => (input: Flow<T>) => KeyedFlow<T>;
}

/** A repartition's flow, and what must hold on the server before the task's job starts. */
export interface Repartitioned<T> {
  flow: KeyedFlow<T>;
  /** Makes (or checks) the stream; rejects with `JobDefinitionError` when an existing one does not capture the topic. */
  prepare: () => Promise<void>;
}

/**
 * A `keyBy` on another key inside one task (Kafka Streams' repartition topic between two sub-topologies): `flow`'s
 * records are published by `toNats` to the partition of their new key's key group (batched, after each checkpoint
 * commits, with message ids made of the key group and the checkpoint), and this task's own partition of the topic
 * is read back by a `natsSource` of the same job, keyed by the new key. One job per key group so holds both parts:
 * one checkpoint, one commit, for both parts' offsets and state.
 */
export function repartition<T>(context: RepartitionContext, flow: Flow<T>, options: RepartitionOptions<T>): Repartitioned<T> {
  const { job, name, keyGroup, maxParallelism, servers, connection } = context;
  const { stream, topic, key, uid = topic, batch = { maxRecords: 1000 }, duplicateWindow = DEFAULT_DUPLICATE_WINDOW } = options ?? ({} as RepartitionOptions<T>);
  const who = `${name}: repartition ${String(stream)}.${String(topic)}`;
  if (job === undefined || !(flow?.graph === job.graph)) throw new JobDefinitionError(`${who}: the flow must belong to the job task.createJob() made (call it first, and repartition flows of that job)`);
  if (typeof stream !== 'string' || !/^[^\s.*>/\\]+$/.test(stream)) throw new JobDefinitionError(`${who}: stream must be a JetStream stream name (no '.', '*', '>', slashes or white space)`);
  if (typeof key !== 'function') throw new JobDefinitionError(`${who}: key must be a function of the record (the new key)`);
  if (typeof uid !== 'string' || uid === '') throw new JobDefinitionError(`${who}: uid must be a non-empty string`);
  if (!(Number.isFinite(duplicateWindow) && duplicateWindow >= 1000)) throw new JobDefinitionError(`${who}: duplicateWindow must be ≥ 1000 ms, got ${String(duplicateWindow)}`);
  // Checks the topic token, and gives the subjects by weir's key-group function.
  const partitions = keyGroupPartitions({ prefix: stream, topic, maxParallelism });
  // Message ids carry the key group: every task's sink has the same uid, and its random `run` alone could meet another
  // task's. Not the group's name, so that a group started from another's savepoint publishes what that savepoint still
  // held under the ids the other one used, which the stream drops within its duplicate window.
  flow.pipe(
    toNats(
      { servers, ...(connection === undefined ? {} : { connection }), subject: partitions.byKey(key), batch, msgId: (p) => `${p.uid}/kg${keyGroup}/${p.run}/${p.checkpoint}/${p.index}` },
      { uid: `${uid}-out` },
    ),
  );
  const read = job
    .source(natsSource<T>({ servers, ...(connection === undefined ? {} : { connection }), stream, subjects: partitions.subjects([keyGroup]), bounded: false }), { uid })
    .pipe(context.keyBy(key));
  return { flow: read, prepare: () => ensureStream({ servers, connection, stream, subject: partitions.subject(keyGroup), duplicateWindow, who }) };
}

/**
 * Makes the repartition stream when no stream captures the topic yet, else checks that `stream` is the one that does.
 * Members race to make it with the same configuration, which JetStream accepts from each. A server that does not answer
 * rejects with its own error (the runner retries); a refusal of the server is the definition's fault.
 */
async function ensureStream(options: { servers: string | string[]; connection?: Omit<NatsConnectOptions, 'servers'>; stream: string; subject: string; duplicateWindow: number; who: string }): Promise<void> {
  const { servers, connection: connectOptions, stream, subject, duplicateWindow, who } = options;
  const connection = lazyNatsConnection({ ...connectOptions, servers, maxReconnectAttempts: 0 });
  try {
    const { jsm } = await connection.get();
    const { JetStreamApiError } = await natsJetStream.load();
    const captured = await jsm.streams.find(subject).catch((error: unknown) => {
      if (error instanceof JetStreamApiError || /no stream matches subject/i.test(String(error))) return undefined;
      throw error;
    });
    if (captured === stream) return;
    if (captured !== undefined) {
      throw new JobDefinitionError(`${who}: its subject '${subject}' belongs to stream '${captured}', not '${stream}'; give stream '${captured}', or another topic`);
    }
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`], duplicate_window: duplicateWindow * 1_000_000 }).catch((error: unknown) => {
      if (!(error instanceof JetStreamApiError)) throw error;
      throw new JobDefinitionError(
        `${who}: no stream captures '${subject}', and stream '${stream}' cannot be made over '${stream}.>' (${error.message}); ` +
          `add '${stream}.>' to the subjects of stream '${stream}', or give a stream name that is free`,
        { cause: error },
      );
    });
  } finally {
    await connection.close().catch(() => undefined);
  }
}
