import type { JetStreamManager } from '@nats-io/jetstream';
import type { ObjectStore } from '@nats-io/obj';
import { CheckpointCorruptedError, CheckpointNotFoundError, ConnectorError, JobDefinitionError } from '../../core/errors.js';
import type { CheckpointStorage } from '../../core/types.js';
import { directoryPrefix, normalizePath } from '../../storage/storagePaths.js';
import { lazyPackage } from '../connectors/lazyPackage.js';
import { lazyNatsConnection, natsJetStream, type NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { readObjectChunks } from './readObjectChunks.js';

/** The NATS Object Store client, imported when the storage first connects (see lazyPackage). */
const natsObjectStore = lazyPackage(() => import('@nats-io/obj'));

export interface NatsObjectCheckpointStorageOptions {
  /** The NATS servers, e.g. `'127.0.0.1:4222'`. */
  servers: string | string[];
  /** Everything else the client takes to connect (user, pass, token, tls…): used, never logged. */
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** The Object Store bucket the checkpoints live in; created on first use when it does not exist. */
  bucket: string;
  /** How long one request waits for the server before the operation fails, in ms (5000 by default). */
  timeout?: number;
}

/** A checkpoint storage that holds a NATS connection: `close` gives it up once no job uses the storage any more. */
export interface NatsObjectCheckpointStorage extends CheckpointStorage {
  close(): Promise<void>;
}

/**
 * Checkpoint storage in a NATS JetStream Object Store bucket: storage that every weir process reaching the server
 * shares, in the same engine as the job's partitions. Paths are object names, in weir's one logical layout
 * (`<job>/chk-<n>/…`, `_metadata` written last). A put is atomic because the Object Store publishes an object's
 * metadata after its chunks, as a roll-up of the metadata subject: a reader sees the old object or the whole new one.
 * Chunks are checked against the SHA-256 digest kept in the metadata, so a damaged object is rejected with
 * `CheckpointCorruptedError`; a server that does not answer fails the operation with `ConnectorError` after `timeout`.
 * @example createJob({ name: 'clicks', checkpoints: { storage: natsObjectCheckpointStorage({ servers: '127.0.0.1:4222', bucket: 'weir-checkpoints' }) } })
 */
export function natsObjectCheckpointStorage(options: NatsObjectCheckpointStorageOptions): NatsObjectCheckpointStorage {
  const { servers, connection: connectOptions, bucket, timeout = 5000 } = options;
  const who = `natsObjectCheckpointStorage(${String(bucket)})`;
  // The server's rule for bucket names (they become a stream name and subject tokens).
  if (typeof bucket !== 'string' || !/^[-\w]+$/.test(bucket)) throw new JobDefinitionError(`${who}: bucket must be a non-empty name of letters, digits, '-' and '_'`);
  if (!(Number.isFinite(timeout) && timeout > 0)) throw new JobDefinitionError(`${who}: timeout must be a positive number of ms, got ${String(timeout)}`);
  const connection = lazyNatsConnection({ ...connectOptions, servers });
  // The bucket, and the stream API for what the Object Store client does not do well (listing, removing whole).
  let opened: Promise<{ os: ObjectStore; jsm: JetStreamManager }> | undefined;
  const store = (): Promise<{ os: ObjectStore; jsm: JetStreamManager }> => {
    if (opened) return opened;
    const attempt = Promise.all([connection.get(), natsJetStream.load(), natsObjectStore.load()]).then(async ([{ connection: nc }, { jetstream }, { Objm }]) => {
      const js = jetstream(nc, { timeout });
      return { os: await new Objm(js).create(bucket), jsm: await js.jetstreamManager(false) };
    });
    opened = attempt;
    // A failed open is forgotten, so the next operation (after an outage, say) tries again.
    attempt.catch(() => {
      if (opened === attempt) opened = undefined;
    });
    return attempt;
  };
  /** The client's error, named with the bucket, the path and the way out. */
  const unavailable = (doing: string, path: string) => (cause: unknown): never => {
    if (cause instanceof CheckpointNotFoundError || cause instanceof CheckpointCorruptedError) throw cause;
    throw new ConnectorError(
      `${who}: cannot ${doing} '${path}': ${String((cause as Error)?.message ?? cause)}; check that the NATS server is reachable and has JetStream enabled (checkpoints completed before are intact)`,
      { cause },
    );
  };
  const stream = `OBJ_${bucket}`;
  const metaPrefix = `$O.${bucket}.M.`;
  /**
   * The objects the bucket holds, by name, with their metadata subject: read from the stream's subject index in one
   * request. The client's `list()` opens a consumer that delivers the metadata of every object ever written (a removed
   * one keeps a marker) and stays on the server for five minutes: listed after each checkpoint (retention), that grew
   * into thousands of consumers and most of the server's work, and slowed every member's lease renewals past the lease.
   */
  const objects = async (jsm: JetStreamManager): Promise<Map<string, string>> => {
    const info = await jsm.streams.info(stream, { subjects_filter: `${metaPrefix}>` });
    const found = new Map<string, string>();
    // A name's subject token is its base64url encoding (padded) of the name's bytes as the client's `btoa` takes them.
    for (const subject of Object.keys(info.state.subjects ?? {})) found.set(Buffer.from(subject.slice(metaPrefix.length), 'base64url').toString('latin1'), subject);
    return found;
  };
  const names = async (): Promise<string[]> => [...(await objects((await store()).jsm)).keys()];

  return {
    location: `nats object store ${bucket}`,
    releasesWrittenData: true,
    async write(path, data) {
      // Copied so that a caller reusing its buffer cannot change the object while its chunks are sent.
      await store()
        .then(({ os }) => os.putBlob({ name: normalizePath(path) }, new Uint8Array(data)))
        .catch(unavailable('write', path));
    },
    async read(path) {
      const name = normalizePath(path);
      return store()
        .then(async ({ os }) => {
          const info = await os.info(name);
          if (info === null || info.deleted) throw new CheckpointNotFoundError(`${who}: '${path}' does not exist`);
          // The client waits for ever on chunks that are not there (its consumer has nothing to deliver), so a
          // truncated object is told from the chunk count the server holds before it is read.
          const held = await chunkCount(os, bucket, info.nuid);
          if (held !== info.chunks) throw new CheckpointCorruptedError(`${who}: '${path}' is truncated: its metadata counts ${info.chunks} chunks, the bucket holds ${held}; restore from another checkpoint`);
          const result = await os.get(name);
          if (result === null) throw new CheckpointNotFoundError(`${who}: '${path}' does not exist`);
          // Removed while it is read (a member's retention dropped it): as if it had not been there.
          const whole = async () => (await chunkCount(os, bucket, info.nuid)) === info.chunks;
          const removed = () => new CheckpointNotFoundError(`${who}: '${path}' was removed while it was read (a newer checkpoint replaced it); read the latest one`);
          return await readObjectChunks(result, whole, removed).catch((cause: unknown) => {
            if (/digests do not match/.test(String((cause as Error)?.message))) {
              throw new CheckpointCorruptedError(`${who}: '${path}' is corrupted: its chunks do not match the SHA-256 digest in its metadata; restore from another checkpoint`, { cause });
            }
            throw cause;
          });
        })
        .catch(unavailable('read', path));
    },
    async list(dir) {
      const prefix = directoryPrefix(dir);
      const all = await names().catch(unavailable('list', dir));
      const children = new Set<string>();
      for (const name of all) if (name.startsWith(prefix)) children.add(name.slice(prefix.length).split('/', 1)[0]!);
      return [...children].sort();
    },
    async remove(path) {
      const file = normalizePath(path);
      const prefix = directoryPrefix(path);
      await store()
        .then(async ({ os, jsm }) => {
          for (const [name, subject] of await objects(jsm)) {
            if (name !== file && !name.startsWith(prefix)) continue;
            const info = await os.info(name);
            // Its metadata first (from then on it does not exist for a reader), then its chunks: nothing of it is left,
            // not even the deletion marker the client's `delete` keeps, so listings never meet it again.
            await jsm.streams.purge(stream, { filter: subject });
            if (info !== null) await jsm.streams.purge(stream, { filter: `$O.${bucket}.C.${info.nuid}` });
          }
        })
        .catch(unavailable('remove', path));
    },
    async close() {
      opened = undefined;
      await connection.close();
    },
  };
}

/** How many chunk messages the bucket's stream holds for the object whose chunks are published under `nuid`. */
async function chunkCount(os: ObjectStore, bucket: string, nuid: string): Promise<number> {
  const subject = `$O.${bucket}.C.${nuid}`;
  const status = await os.status({ subjects_filter: subject });
  const subjects = status.streamInfo.state.subjects ?? {};
  return subjects[subject] ?? 0;
}
