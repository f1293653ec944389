import type { KV } from '@nats-io/kv';
import { CheckpointNotFoundError, ConnectorError, JobDefinitionError } from '../../core/errors.js';
import type { CheckpointStorage } from '../../core/types.js';
import { readSavepoint, type SavepointReader } from '../../stateProcessor/readSavepoint.js';
import { lazyNatsConnection, type NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { openGroup } from './scaleOutStatus.js';

export interface PurgeConsumedOptions {
  /** The NATS servers. */
  servers: string | string[];
  /** Everything else the client takes to connect (user, pass, token, tls…). */
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** The JetStream stream to purge: a repartition stream one group writes (toNats) and `group` reads. */
  stream: string;
  /** The scale-out group that reads it: its committed checkpoints hold the offsets below which nothing is read again. */
  group: string;
  /** The uid of the `natsSource` reading `stream` in the group's tasks. */
  source: string;
  /** The group's shared checkpoint storage, where its committed checkpoints are. */
  storage: CheckpointStorage;
}

/** What `purgeConsumed` did to one subject (split) of the stream. */
export interface PurgedSubject {
  subject: string;
  /** Messages of the subject with a sequence below this one were purged. */
  below: number;
  purged: number;
}

/**
 * Purges what a scale-out group has consumed for good from a JetStream stream (Kafka Streams' purge of repartition
 * topics below the committed offsets): for each key group's committed checkpoint, the `source`'s saved offset per
 * subject (its last sequence read) is read without the job's code, and the subject's messages up to it are purged
 * (`purge` with `filter` and `seq`); an offset in the middle of a batch message (`toNats({ batch })`) keeps that
 * message. A new owner restores from the committed checkpoint and reads on after its
 * offsets, so it never asks for those messages again; subjects of key groups that have no commit yet are left whole.
 * Call it now and then (a timer, a cron job); it only purges, so it is safe to run beside the group. Not covered: a
 * task that restarts in place and falls back past its committed checkpoint (only when that one cannot be read).
 * @example
 * await purgeConsumed({ servers, stream: 'SHOP-BY-CUSTOMER', group: 'shop-totals', source: 'by-customer', storage });
 */
export async function purgeConsumed(options: PurgeConsumedOptions): Promise<PurgedSubject[]> {
  const { servers, connection: connectOptions, stream, group, source, storage } = options;
  const who = `purgeConsumed(${String(stream)}) for group '${String(group)}'`;
  if (typeof stream !== 'string' || stream === '') throw new JobDefinitionError(`${who}: give the stream to purge`);
  if (typeof group !== 'string' || !/^[-\w]+$/.test(group)) throw new JobDefinitionError(`${who}: group must be a name of letters, digits, '-' and '_'`);
  if (typeof source !== 'string' || source === '') throw new JobDefinitionError(`${who}: give the uid of the natsSource that reads the stream in the group's tasks`);
  if (storage === null || typeof storage !== 'object' || typeof storage.read !== 'function') throw new JobDefinitionError(`${who}: storage must be the group's shared checkpoint storage`);
  const connection = lazyNatsConnection({ ...connectOptions, servers });
  try {
    const buckets = await openGroup(connection, group);
    const { commits } = buckets;
    // The lowest committed offset per subject: one key group reads a subject, but a subject read by several (a
    // wildcard, say) keeps what the slowest still needs.
    const offsets = new Map<string, number>();
    for (const key of (await buckets.list('commits', 'kg.*')).keys()) {
      const checkpoint = await readCommitted(commits, key, storage);
      if (checkpoint === undefined) continue;
      const { path } = checkpoint;
      if (!checkpoint.operators.some((operator) => operator.uid === source)) {
        throw new JobDefinitionError(`${who}: the committed checkpoint ${path} has no operator '${source}'; give the uid of the natsSource reading '${stream}'`);
      }
      for await (const { operator } of checkpoint.payloads(source)) {
        // A split source saves `{ offset: { splits: [{ id, offset, finished }] } }`: a natsSource's split id is its subject
        // filter and its offset the last sequence read.
        const splits = (operator as { offset?: { splits?: unknown } } | undefined)?.offset?.splits;
        if (!Array.isArray(splits)) continue;
        for (const split of splits as { id?: unknown; offset?: unknown }[]) {
          if (typeof split?.id !== 'string') continue;
          // `[sequence, records read]` is a batch read half-way: its message is still needed, the one before it is not.
          const mid = Array.isArray(split.offset) && typeof split.offset[0] === 'number' ? split.offset[0] - 1 : undefined;
          const last = typeof split.offset === 'number' ? split.offset : mid;
          if (last === undefined) continue;
          offsets.set(split.id, Math.min(last, offsets.get(split.id) ?? Infinity));
        }
      }
    }
    const { jsm } = await connection.get();
    const purged: PurgedSubject[] = [];
    for (const [subject, offset] of [...offsets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const response = await jsm.streams.purge(stream, { filter: subject, seq: offset + 1 }).catch((cause: unknown) => {
        throw new ConnectorError(`${who}: cannot purge subject '${subject}' below sequence ${offset + 1}: ${String((cause as Error)?.message ?? cause)}; check the stream's name and that it holds that subject`, { cause });
      });
      purged.push({ subject, below: offset + 1, purged: response.purged });
    }
    return purged;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/**
 * A key group's committed checkpoint, opened; undefined when it has none. A task commits every checkpoint interval and
 * then drops the one before, so the one read may be gone by the time it is opened: the commit moved on, read again.
 */
async function readCommitted(commits: KV, key: string, storage: CheckpointStorage): Promise<SavepointReader | undefined> {
  for (let attempt = 0; ; attempt++) {
    const entry = await commits.get(key);
    const path = entry === null || entry.operation !== 'PUT' ? undefined : entry.json<{ value?: { checkpoint?: unknown } | null }>()?.value?.checkpoint;
    if (typeof path !== 'string') return undefined;
    try {
      return await readSavepoint(storage, path);
    } catch (error) {
      if (!(error instanceof CheckpointNotFoundError) || attempt >= 4) throw error;
    }
  }
}
