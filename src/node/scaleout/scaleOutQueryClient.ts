import type { KV } from '@nats-io/kv';
import { JobDefinitionError } from '../../core/errors.js';
import { keyGroupOf } from '../../core/keyGroups.js';
import type { Key } from '../../core/types.js';
import { mergeKeyPages } from '../../query/mergeKeyPages.js';
import { KeyGroupNotOwnedError, QueryableStateUnavailableError, QueryServerUnreachableError } from '../../query/queryErrors.js';
import { QueryableStateClient } from '../../query/queryableStateClient.js';
import type { KeyPage, KeyPageOptions, QueryOptions } from '../../query/stateQueries.js';
import { lazyNatsConnection, type NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { endpointKey, openGroup, type GroupBuckets, type ScaleOutEndpoint } from './scaleOutStatus.js';

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

/** The member holding `keyGroup`'s lease; `KeyGroupNotOwnedError` while it has none. */
async function ownerOfKeyGroup(group: string, leases: KV, keyGroup: number): Promise<string> {
  const owner = (await leases.get(`kg.${keyGroup}`))?.string() || undefined;
  if (owner === undefined) throw new KeyGroupNotOwnedError(`group '${group}': key group ${keyGroup} has no owner right now (being handed over, or its owner died)`, keyGroup, undefined, undefined);
  return owner;
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
  private buckets: Promise<GroupBuckets> | undefined;
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
   * A page of the keys of queryable state `name` across the group, in key order; pass `cursor` back for the next
   * page (Kafka Streams' `allMetadataForStore` and a call to each instance, merged). Each page asks every key group's
   * owner, once per member, for the smallest `limit` keys after the cursor of the key groups it owns, and merges
   * them as a job merges its workers' pages. The cursor is a key, not a member's position, so a listing goes on
   * across a hand-over; there is no snapshot across members or pages (see README, "Queries routed to the owner").
   * While ownership moves it re-reads the owners and asks again, for up to `timeoutMs`; past it, a member that
   * cannot be reached is a `QueryServerUnreachableError` naming it and its key groups: call `keys` again with the
   * same cursor, which loses nothing read so far.
   * @example
   * let page = await client.keys('counts', { prefix: 'user-', limit: 500 });
   * while (page.cursor) page = await client.keys('counts', { prefix: 'user-', limit: 500, cursor: page.cursor });
   */
  async keys(name: string, options: KeyPageOptions = {}): Promise<KeyPage> {
    const { group } = this.options;
    const deadline = Date.now() + (this.options.timeoutMs ?? 30_000);
    for (let attempt = 0; ; attempt++) {
      try {
        const owners = await this.owners();
        const pages = await Promise.all(
          [...owners].map(async ([owner, { url, keyGroups }]) => {
            try {
              return await this.client(url).keys(name, { ...options, keyGroups });
            } catch (error) {
              if (!(error instanceof QueryServerUnreachableError)) throw error;
              throw new QueryServerUnreachableError(
                `keys of '${name}' in group '${group}': member '${owner}' (key groups ${keyGroups.join(', ')}) at ${url} cannot be reached; ` +
                  'once its lease ran out another member restores its key groups: call keys again with the same cursor (nothing read so far is lost)',
                { cause: error },
              );
            }
          }),
        );
        return mergeKeyPages(pages, options.limit);
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
    const { leases, commits, maxParallelism } = await this.groupBuckets();
    const keyGroup = keyGroupOf(key, maxParallelism);
    const owner = await ownerOfKeyGroup(this.options.group, leases, keyGroup);
    return { keyGroup, owner, url: await this.urlOf(commits, owner, keyGroup) };
  }

  /** Gives the NATS connection up. */
  async close(): Promise<void> {
    await this.connection.close();
  }

  /** Every key group's owner now, by member, with its address: `KeyGroupNotOwnedError` while one has none. */
  private async owners(): Promise<Map<string, { url: string; keyGroups: number[] }>> {
    const { leases, commits, maxParallelism } = await this.groupBuckets();
    const { group } = this.options;
    const owners = await Promise.all(Array.from({ length: maxParallelism }, (_, keyGroup) => ownerOfKeyGroup(group, leases, keyGroup)));
    const byMember = new Map<string, { url: string; keyGroups: number[] }>();
    for (const [keyGroup, owner] of owners.entries()) {
      let served = byMember.get(owner);
      if (served === undefined) byMember.set(owner, (served = { url: await this.urlOf(commits, owner, keyGroup), keyGroups: [] }));
      served.keyGroups.push(keyGroup);
    }
    return byMember;
  }

  /** The group's buckets, opened once, and its number of key groups, which every member advertises with its address. */
  private async groupBuckets(): Promise<{ leases: KV; commits: KV; maxParallelism: number }> {
    const { group } = this.options;
    const buckets = await (this.buckets ??= openGroup(this.connection, group).catch((error: unknown) => {
      this.buckets = undefined;
      throw error;
    }));
    let maxParallelism = this.maxParallelism;
    if (maxParallelism === undefined) {
      for (const entry of (await buckets.list('commits', endpointKey('*'))).values()) maxParallelism = this.maxParallelism = entry.json<ScaleOutEndpoint>().maxParallelism;
    }
    if (maxParallelism === undefined) throw new KeyGroupNotOwnedError(`group '${group}': no member serves queries; start serveScaleOutQueries(runner, …) in its members`, undefined, undefined, undefined);
    return { leases: buckets.leases, commits: buckets.commits, maxParallelism };
  }

  /** The URL `owner` advertised; `KeyGroupNotOwnedError` (for `keyGroup`) when it serves no queries. */
  private async urlOf(commits: KV, owner: string, keyGroup: number): Promise<string> {
    const endpoint = await commits.get(endpointKey(owner));
    if (endpoint?.operation !== 'PUT') throw new KeyGroupNotOwnedError(`group '${this.options.group}': key group ${keyGroup}'s owner, member '${owner}', serves no queries`, keyGroup, owner, undefined);
    return endpoint.json<ScaleOutEndpoint>().url;
  }

  private client(url: string): QueryableStateClient {
    let client = this.clients.get(url);
    if (client === undefined) this.clients.set(url, (client = new QueryableStateClient(url, { token: this.options.token })));
    return client;
  }
}
