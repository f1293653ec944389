import type { KV, KvEntry } from '@nats-io/kv';
import { ConnectorError, JobDefinitionError } from '../../core/errors.js';
import type { CheckpointStorage } from '../../core/types.js';
import { checkMetadata } from '../../checkpoint/loadCheckpoint.js';
import { decodeFile } from '../../storage/fileFormat.js';
import { METADATA_FILE } from '../../storage/layout.js';
import { readStored } from '../../storage/readStored.js';
import { lazyNatsConnection, natsKv, type LazyNatsConnection, type NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { kvEntries } from './kvEntries.js';

export interface ScaleOutStatusOptions {
  /** The NATS servers the group's members use. */
  servers: string | string[];
  /** Everything else the client takes to connect (user, pass, token, tls…). */
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** The group's name, as its members give it. */
  group: string;
  /** The members' shared checkpoint storage: given, each committed checkpoint's `_metadata` is read for its id and time. */
  storage?: CheckpointStorage;
}

/** A scale-out group as its KV buckets show it now (Kafka Streams' `metadataForAllStreamsClients`, Flink's overview). */
export interface ScaleOutStatus {
  group: string;
  /** The live members (their heartbeat has not expired), by id. */
  members: ScaleOutMemberStatus[];
  /** Every key group that has a lease or a commit, ascending. */
  keyGroups: KeyGroupStatus[];
}

export interface ScaleOutMemberStatus {
  id: string;
  /** Milliseconds since its last heartbeat, by the server's clock at write and this one's now. */
  heartbeatAgeMs: number;
  /** The key groups whose lease it holds (ascending). */
  owns: number[];
  /** Where it serves queries of its key groups' state (`serveScaleOutQueries`), if it does. */
  queryUrl?: string;
}

export interface KeyGroupStatus {
  keyGroup: number;
  /** The member holding its lease; undefined while it has none (being handed over, or its owner died). */
  owner: string | undefined;
  /** The revision of its commit record: the fencing token of its owner's last accepted write. */
  token: number | undefined;
  /** The member that wrote the commit record last. */
  committedBy: string | undefined;
  /** The committed checkpoint: its path in the shared storage, and its id and time when a storage was given. */
  checkpoint?: { path: string; id?: number; timestamp?: number; error?: string };
}

/** What a member advertises under `endpoints.<id>` in `<group>-commits`: where it serves queries, and the group's size. */
export interface ScaleOutEndpoint {
  url: string;
  maxParallelism: number;
}

/** The key of a member's advertised endpoint in the group's commits bucket (kept: no TTL, overwritten on restart). */
export const endpointKey = (member: string) => `endpoints.${member}`;

/**
 * Reads a scale-out group's state from its KV buckets: the live members with their heartbeat age, the owner of each
 * key group, and each key group's committed checkpoint (with its id and time, read from the shared storage's
 * `_metadata`, when `storage` is given). It only reads: any process that can reach the server can call it.
 * @example
 * const status = await scaleOutStatus({ servers: '127.0.0.1:4222', group: 'shop' });
 * for (const kg of status.keyGroups) console.log(kg.keyGroup, kg.owner, kg.checkpoint?.path);
 */
export async function scaleOutStatus(options: ScaleOutStatusOptions): Promise<ScaleOutStatus> {
  const { servers, connection: connectOptions, group, storage } = options;
  if (typeof group !== 'string' || !/^[-\w]+$/.test(group)) throw new JobDefinitionError(`scaleOutStatus: group must be a name of letters, digits, '-' and '_', got ${String(group)}`);
  const connection = lazyNatsConnection({ ...connectOptions, servers });
  try {
    return await readGroupStatus(group, await openGroup(connection, group), storage);
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** The status read from a group's open buckets (`scaleOutStatus`, and a member's `GET /v1/group`). */
export async function readGroupStatus(group: string, buckets: GroupBuckets, storage?: CheckpointStorage): Promise<ScaleOutStatus> {
  const now = Date.now();
  const [heartbeats, leaseEntries, commitEntries, endpoints] = await Promise.all([
    buckets.list('leases', 'members.*'),
    buckets.list('leases', 'kg.*'),
    buckets.list('commits', 'kg.*'),
    buckets.list('commits', 'endpoints.*'),
  ]);

  const numbers = new Set<number>();
  for (const key of [...leaseEntries.keys(), ...commitEntries.keys()]) numbers.add(Number(key.slice('kg.'.length)));
  const keyGroups: KeyGroupStatus[] = [];
  for (const keyGroup of [...numbers].sort((a, b) => a - b)) {
    const held = leaseEntries.get(`kg.${keyGroup}`);
    let commit = commitEntries.get(`kg.${keyGroup}`);
    let checkpoint: KeyGroupStatus['checkpoint'];
    // A task commits every checkpoint interval and then drops the checkpoint before: one read between the commit
    // record and its `_metadata` may find it gone. The commit record moved on then; a few reads catch up with it.
    for (let attempt = 0; ; attempt++) {
      const path = committedPath(commit);
      checkpoint = path === undefined ? undefined : storage === undefined ? { path } : await describeCheckpoint(storage, path);
      if (checkpoint?.error === undefined || attempt >= 4) break;
      const again = await buckets.commits.get(`kg.${keyGroup}`);
      if (again === null || again.operation !== 'PUT' || again.revision === commit?.revision) break;
      commit = again;
    }
    keyGroups.push({
      keyGroup,
      owner: held?.string(),
      token: commit?.revision,
      committedBy: commit?.json<CommitRecord>()?.owner,
      ...(checkpoint === undefined ? {} : { checkpoint }),
    });
  }
  const members = [...heartbeats.entries()]
    .map(([key, entry]): ScaleOutMemberStatus => {
      const id = key.slice('members.'.length);
      const endpoint = endpoints.get(endpointKey(id))?.json<ScaleOutEndpoint>();
      return {
        id,
        heartbeatAgeMs: Math.max(0, now - entry.created.getTime()),
        owns: keyGroups.filter((kg) => kg.owner === id).map((kg) => kg.keyGroup),
        ...(typeof endpoint?.url === 'string' ? { queryUrl: endpoint.url } : {}),
      };
    })
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { group, members, keyGroups };
}

/** A key group's commit record, as `joinScaleOut` writes it and `runScaleOut` fills its value. */
type CommitRecord = { owner?: string; value?: { checkpoint?: unknown } | null };

/** The checkpoint path a commit record points at, if any. */
function committedPath(entry: KvEntry | undefined): string | undefined {
  const checkpoint = entry?.json<CommitRecord>()?.value?.checkpoint;
  return typeof checkpoint === 'string' ? checkpoint : undefined;
}

/** A group's two buckets, and the current entries of either whose keys match a filter (see kvEntries). */
export interface GroupBuckets {
  readonly leases: KV;
  readonly commits: KV;
  list(bucket: 'leases' | 'commits', filter: string): Promise<Map<string, KvEntry>>;
}

/** The group's two buckets, opened without creating them: a group no member ever joined is an error that says so. */
export async function openGroup(connection: LazyNatsConnection, group: string): Promise<GroupBuckets> {
  const { connection: nc, jsm } = await connection.get().catch((cause: unknown) => {
    throw new ConnectorError(`scale-out group '${group}': cannot connect to NATS: ${String(cause)}`, { cause });
  });
  const { Kvm } = await natsKv.load();
  const kvm = new Kvm(nc);
  try {
    const leases = await kvm.open(`${group}-leases`);
    const commits = await kvm.open(`${group}-commits`);
    // `open` binds lazily: reading the status is what finds a bucket missing.
    await leases.status();
    await commits.status();
    return { leases, commits, list: (bucket, filter) => kvEntries({ kv: bucket === 'leases' ? leases : commits, name: `${group}-${bucket}`, jsm }, filter) };
  } catch (cause) {
    throw new ConnectorError(
      `scale-out group '${group}' has no KV buckets '${group}-leases' and '${group}-commits' on this server (${String((cause as Error)?.message ?? cause)}); ` +
        'check the group name and the servers: the buckets exist once a member joined (joinScaleOut, runScaleOut)',
      { cause },
    );
  }
}

/** A committed checkpoint's id and time from its `_metadata`; a checkpoint that cannot be read says why. */
async function describeCheckpoint(storage: CheckpointStorage, path: string): Promise<NonNullable<KeyGroupStatus['checkpoint']>> {
  const file = `${path}/${METADATA_FILE}`;
  try {
    const stored = await readStored(storage, file);
    const metadata = checkMetadata(decodeFile('metadata', stored.data, file, stored.values), file);
    return { path, id: metadata.id, timestamp: metadata.timestamp };
  } catch (error) {
    return { path, error: String((error as Error)?.message ?? error) };
  }
}
