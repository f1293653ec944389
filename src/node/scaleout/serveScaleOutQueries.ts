import { keyGroupOf } from '../../core/keyGroups.js';
import type { CheckpointStorage, Key } from '../../core/types.js';
import { InvalidQueryError, KeyGroupNotOwnedError, QueryableStateUnavailableError } from '../../query/queryErrors.js';
import type { QueryableStateInfo } from '../../query/queryableStateRegistry.js';
import { mergeKeyPages } from '../../query/mergeKeyPages.js';
import type { KeyPage, KeyPageOptions, QueryableStateReader, QueryOptions } from '../../query/stateQueries.js';
import type { NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { lazyNatsConnection } from '../connectors/nats/natsConnection.js';
import { serveQueryableState, type QueryableStateServer, type QueryableStateServerOptions } from '../queryableStateServer.js';
import type { ScaleOutRunner } from './runScaleOut.js';
import { endpointKey, openGroup, readGroupStatus, type ScaleOutEndpoint, type ScaleOutStatus } from './scaleOutStatus.js';

export interface ServeScaleOutQueriesOptions extends Omit<QueryableStateServerOptions, 'metrics'> {
  /** The NATS servers of the runner's group, where the member advertises its address. */
  servers: string | string[];
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** The URL other processes reach this server at (the server's own `url` by default: fine on one host or 0.0.0.0's). */
  advertise?: string;
  /** The members' shared checkpoint storage: given, `GET /v1/group` shows each committed checkpoint's id and time. */
  storage?: CheckpointStorage;
}

/**
 * Serves queries of the state of the key groups a scale-out member owns (Kafka Streams' interactive queries), with
 * `serveQueryableState`'s server, and advertises its address in the group's commits bucket (`endpoints.<member>`)
 * for `ScaleOutQueryClient`. A key is answered by the task of its key group (`keyGroupOf(key, maxParallelism)`) when
 * it runs here (`QueryableStateUnavailableError`, 503, while its task starts); a key of a key group owned elsewhere
 * gets `KeyGroupNotOwnedError` (HTTP 421) naming its owner and
 * where that one serves. A key listing is asked for with the key groups to list (`keyGroups`, all this member's, as
 * `ScaleOutQueryClient.keys` asks); without them it spans members and is refused. `GET /v1/group` answers the group's
 * status (`scaleOutStatus`: members, owners, committed checkpoints) with this member's id and running key groups;
 * with `liveView`, the page at `/group` draws it (each member and the key groups it owns, each key group's committed
 * checkpoint id and age), polling it each second.
 * @example
 * const runner = await runScaleOut(define, options);
 * const server = await serveScaleOutQueries(runner, { servers, port: 0 });
 * const client = new ScaleOutQueryClient({ servers, group: runner.group });
 * await client.get('counts', 'ann');   // asked of whichever member owns ann's key group
 * await client.keys('counts', { limit: 100 });   // every member asked for its key groups' keys, merged
 */
export async function serveScaleOutQueries(runner: ScaleOutRunner, options: ServeScaleOutQueriesOptions): Promise<QueryableStateServer> {
  const { servers, connection: connectOptions, advertise, storage, ...serverOptions } = options;
  const { group, maxParallelism, member } = runner;
  const connection = lazyNatsConnection({ ...connectOptions, servers });
  try {
    const buckets = await openGroup(connection, group);
    const { leases, commits } = buckets;
    // `key`: the key asked for, when the query was one; a listing asks for key groups.
    const notOwned = async (keyGroup: number, key?: Key): Promise<Error> => {
      const owner = (await leases.get(`kg.${keyGroup}`).catch(() => null))?.string() || undefined;
      // Claimed, and its task not started yet (restoring, or waiting for its former owner's hand-over).
      if (owner === member.id) return new QueryableStateUnavailableError(`member '${member.id}' of group '${group}' is starting key group ${keyGroup}'s task; ask again shortly`);
      const endpoint = owner === undefined ? null : await commits.get(endpointKey(owner)).catch(() => null);
      const url = endpoint?.operation === 'PUT' ? endpoint.json<ScaleOutEndpoint>().url : undefined;
      const where = owner === undefined ? 'it has no owner right now (being handed over); ask again shortly' : `its owner is member '${owner}'${url === undefined ? ', which serves no queries' : ` at ${url}`}`;
      return new KeyGroupNotOwnedError(
        `member '${member.id}' of group '${group}' does not own key group ${keyGroup}${key === undefined ? '' : ` (key ${JSON.stringify(typeof key === 'bigint' ? String(key) : key)})`}: ${where}; ScaleOutQueryClient follows owners`,
        keyGroup,
        owner,
        url,
      );
    };
    const reader: QueryableStateReader & {
      queryKeyGroups(name: string, keyGroups: unknown, options: KeyPageOptions): Promise<KeyPage>;
      group(): Promise<ScaleOutStatus & { member: string; running: number[] }>;
    } = {
      async query<T>(name: string, key: Key, queryOptions?: QueryOptions): Promise<T | undefined> {
        const keyGroup = keyGroupOf(key, maxParallelism);
        const task = runner.task(keyGroup);
        if (task === undefined) throw await notOwned(keyGroup, key);
        return task.query<T>(name, key, queryOptions);
      },
      queryKeys(name: string): Promise<KeyPage> {
        return Promise.reject(
          new InvalidQueryError(`keys of '${name}' in group '${group}' span the key groups of every member: list them with ScaleOutQueryClient.keys, or ask this member for key groups it owns ({ keyGroups })`),
        );
      },
      // A page of the keys of the key groups asked for, merged from their tasks' pages: all of them run here, or the
      // listing is refused (the client asks each key group's owner, so a key group is never listed twice).
      async queryKeyGroups(name: string, keyGroups: unknown, options: KeyPageOptions): Promise<KeyPage> {
        const valid = (kg: unknown) => Number.isInteger(kg) && (kg as number) >= 0 && (kg as number) < maxParallelism;
        if (!Array.isArray(keyGroups) || keyGroups.length === 0 || !keyGroups.every(valid) || new Set(keyGroups).size !== keyGroups.length) {
          throw new InvalidQueryError(`keys of '${name}' in group '${group}': keyGroups must be distinct key groups from 0 to ${maxParallelism - 1}, got ${JSON.stringify(keyGroups)}`);
        }
        // Each task checkpoints on its own: a checkpoint id is one key group's, never a listing's across several.
        if (options.asOf !== undefined) throw new InvalidQueryError(`keys of '${name}' in group '${group}': asOf is one key group's checkpoint id, so a listing across key groups takes none; list the live keys`);
        const tasks = [];
        for (const keyGroup of keyGroups as number[]) {
          const task = runner.task(keyGroup);
          if (task === undefined) throw await notOwned(keyGroup);
          tasks.push(task);
        }
        return mergeKeyPages(await Promise.all(tasks.map((task) => task.queryKeys(name, options))), options.limit);
      },
      queryableStates(): QueryableStateInfo[] {
        const byName = new Map<string, QueryableStateInfo>();
        for (const keyGroup of runner.running()) for (const state of runner.task(keyGroup)?.queryableStates() ?? []) byName.set(state.name, state);
        return [...byName.values()];
      },
      // GET /v1/group: the group as `scaleOutStatus` reads it, with which member answered and the tasks it runs.
      group: async () => ({ member: member.id, running: runner.running(), ...(await readGroupStatus(group, buckets, storage)) }),
    };
    const server = await serveQueryableState(reader, serverOptions);
    const url = advertise ?? server.url;
    await commits.put(endpointKey(member.id), JSON.stringify({ url, maxParallelism } satisfies ScaleOutEndpoint));
    let closed: Promise<void> | undefined;
    return {
      url: server.url,
      close: () =>
        (closed ??= (async () => {
          // Only this server's record: a member started again elsewhere under the same id may have replaced it.
          const entry = await commits.get(endpointKey(member.id)).catch(() => null);
          if (entry?.operation === 'PUT' && entry.json<ScaleOutEndpoint>().url === url) await commits.delete(endpointKey(member.id), { previousSeq: entry.revision }).catch(() => undefined);
          await server.close();
          await connection.close().catch(() => undefined);
        })()),
    };
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw error;
  }
}
