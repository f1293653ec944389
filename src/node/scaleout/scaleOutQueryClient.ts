import type { KV } from '@nats-io/kv';
import { JobDefinitionError } from '../../core/errors.js';
import { keyGroupOf } from '../../core/keyGroups.js';
import type { Key } from '../../core/types.js';
import { KeyGroupNotOwnedError, QueryableStateUnavailableError, QueryServerUnreachableError } from '../../query/queryErrors.js';
import { QueryableStateClient } from '../../query/queryableStateClient.js';
import type { QueryOptions } from '../../query/stateQueries.js';
import { lazyNatsConnection, type NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { endpointKey, openGroup, type ScaleOutEndpoint } from './scaleOutStatus.js';

export interface ScaleOutQueryClientOptions {
  /** The NATS servers of the group. */
  servers: string | string[];
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** The group's name. */
  group: string;
  /** The bearer token the members' query servers were started with. */
  token?: string;
  /**
   * How long a query may wait for its key group to have an owner that answers, in ms (30 000 by default): during a
   * hand-over or after a member died, until the new owner restored the key group.
   */
  timeoutMs?: number;
}

/** Errors that end once ownership settles: the key group moved, its owner is gone or still restoring it. */
const passing = [KeyGroupNotOwnedError, QueryServerUnreachableError, QueryableStateUnavailableError];

/**
 * Queries the state of a scale-out group's keys wherever they live (Kafka Streams' `queryMetadataForKey` and the
 * call to that host, in one): for a key it computes the key group, reads its owner's lease and the address the owner
 * advertised (`serveScaleOutQueries`), and asks it; while ownership moves (the member asked no longer owns it, is
 * gone, or the new owner is restoring) it reads the owner again and retries, for up to `timeoutMs`.
 * @example
 * const client = new ScaleOutQueryClient({ servers: '127.0.0.1:4222', group: 'shop' });
 * const total = await client.get<number>('totals', 'ann');
 * await client.close();
 */
export class ScaleOutQueryClient {
  private readonly connection;
  private buckets: Promise<{ leases: KV; commits: KV }> | undefined;
  private readonly clients = new Map<string, QueryableStateClient>();
  /** The group's number of key groups, fixed for its life: read once. */
  private maxParallelism: number | undefined;

  constructor(private readonly options: ScaleOutQueryClientOptions) {
    const { servers, connection, group, timeoutMs = 30_000 } = options;
    if (typeof group !== 'string' || !/^[-\w]+$/.test(group)) throw new JobDefinitionError(`ScaleOutQueryClient: group must be a name of letters, digits, '-' and '_', got ${String(group)}`);
    if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0)) throw new JobDefinitionError(`ScaleOutQueryClient: timeoutMs must be a number of ms ≥ 0, got ${String(timeoutMs)}`);
    this.connection = lazyNatsConnection({ ...connection, servers });
  }

  /** The value `key` holds in queryable state `name`, asked of the member owning its key group; undefined when none. */
  async get<T = unknown>(name: string, key: Key, options: QueryOptions = {}): Promise<T | undefined> {
    const deadline = Date.now() + (this.options.timeoutMs ?? 30_000);
    for (let attempt = 0; ; attempt++) {
      try {
        const { url } = await this.ownerOf(key);
        return await this.client(url).get<T>(name, key, options);
      } catch (error) {
        if (!passing.some((type) => error instanceof type) || Date.now() >= deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
      }
    }
  }

  /**
   * Where `key` is served now: its key group, the member holding the key group's lease, and the URL it advertised.
   * `KeyGroupNotOwnedError` when the key group has no owner, or its owner serves no queries.
   */
  async ownerOf(key: Key): Promise<{ keyGroup: number; owner: string; url: string }> {
    const { group } = this.options;
    const { leases, commits } = await (this.buckets ??= openGroup(this.connection, group).catch((error: unknown) => {
      this.buckets = undefined;
      throw error;
    }));
    // Every member advertises the group's number of key groups with its address; any one will do.
    let maxParallelism = this.maxParallelism;
    if (maxParallelism === undefined) {
      for await (const name of await commits.keys(endpointKey('*'))) {
        const entry = await commits.get(name);
        if (entry?.operation === 'PUT') maxParallelism = this.maxParallelism = entry.json<ScaleOutEndpoint>().maxParallelism;
      }
    }
    if (maxParallelism === undefined) throw new KeyGroupNotOwnedError(`group '${group}': no member serves queries; start serveScaleOutQueries(runner, …) in its members`, undefined, undefined, undefined);
    const keyGroup = keyGroupOf(key, maxParallelism);
    const owner = (await leases.get(`kg.${keyGroup}`))?.string() || undefined;
    if (owner === undefined) throw new KeyGroupNotOwnedError(`group '${group}': key group ${keyGroup} has no owner right now (being handed over, or its owner died)`, keyGroup, undefined, undefined);
    const endpoint = await commits.get(endpointKey(owner));
    if (endpoint?.operation !== 'PUT') throw new KeyGroupNotOwnedError(`group '${group}': key group ${keyGroup}'s owner, member '${owner}', serves no queries`, keyGroup, owner, undefined);
    return { keyGroup, owner, url: endpoint.json<ScaleOutEndpoint>().url };
  }

  /** Gives the NATS connection up. */
  async close(): Promise<void> {
    await this.connection.close();
  }

  private client(url: string): QueryableStateClient {
    let client = this.clients.get(url);
    if (client === undefined) this.clients.set(url, (client = new QueryableStateClient(url, { token: this.options.token })));
    return client;
  }
}
