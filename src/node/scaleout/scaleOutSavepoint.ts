import { randomBytes } from 'node:crypto';
import { CheckpointNotFoundError, GroupSavepointError, JobDefinitionError } from '../../core/errors.js';
import { DEFAULT_MAX_PARALLELISM } from '../../core/keyGroups.js';
import type { CheckpointStorage } from '../../core/types.js';
import { lazyNatsConnection, type NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { manifestFile, SAVEPOINT_REQUEST_KEY, savepointAnswerKey, type GroupSavepointManifest, type SavepointAnswer, type SavepointRequest } from './groupSavepoint.js';
import { openGroup } from './scaleOutStatus.js';

export interface ScaleOutSavepointOptions {
  /** The NATS servers the group's members use. */
  servers: string | string[];
  /** Everything else the client takes to connect (user, pass, token, tls…). */
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /** The group's name, as its members give it. */
  group: string;
  /** The members' shared checkpoint storage: the savepoint goes there, and its manifest with it. */
  storage: CheckpointStorage;
  /** A directory of that storage for this savepoint alone (`savepoints/2026-12-06`, say); never deleted by weir. */
  target: string;
  /** Flink's stop-with-savepoint: every task drains, takes its savepoint as its final snapshot and ends; members leave. */
  stop?: boolean;
  /** The group's number of key groups; 128 by default, as for its members. */
  maxParallelism?: number;
  /** How long to wait for every key group's answer, in ms (60 000 by default). */
  timeout?: number;
}

/** A completed group savepoint: where it is, and each key group's savepoint directory. */
export interface ScaleOutSavepoint {
  target: string;
  /** The key groups' savepoint directories, by key group. */
  keyGroups: Record<string, string>;
}

/**
 * Takes a savepoint of a running scale-out group (Flink's `flink savepoint`, and with `stop: true` `flink stop`): it
 * writes a request into the group's commits bucket, which every member reads at its next round (a quarter lease);
 * each takes a savepoint of every key group it owns into `<target>/kg-<n>`, committed by the same fenced
 * compare-and-set as its checkpoints, and answers per key group in the bucket. Once all key groups answered, the
 * manifest `<target>/_group-savepoint` is written last: only then does the savepoint exist for
 * `runScaleOut(define, { fromSavepoint: target })`, which starts a group of any number of members from it. Key groups
 * nobody answered for in `timeout`, or whose savepoint failed, reject with `GroupSavepointError` naming them.
 * @example
 * const storage = natsObjectCheckpointStorage({ servers, bucket: 'shop-chk' });
 * await scaleOutSavepoint({ servers, group: 'shop', storage, target: 'savepoints/v2', stop: true, maxParallelism: 16 });
 * // then, in every process of the new group:
 * await runScaleOut(define, { servers, group: 'shop-v2', member, maxParallelism: 16, storage, fromSavepoint: 'savepoints/v2' });
 */
export async function scaleOutSavepoint(options: ScaleOutSavepointOptions): Promise<ScaleOutSavepoint> {
  const { servers, connection: connectOptions, group, storage, target, stop = false, maxParallelism = DEFAULT_MAX_PARALLELISM, timeout = 60_000 } = options;
  const who = `scaleOutSavepoint of group '${String(group)}'`;
  if (typeof group !== 'string' || !/^[-\w]+$/.test(group)) throw new JobDefinitionError(`${who}: group must be a name of letters, digits, '-' and '_'`);
  if (storage === null || typeof storage !== 'object' || typeof storage.write !== 'function') throw new JobDefinitionError(`${who}: storage must be the checkpoint storage the members share, e.g. natsObjectCheckpointStorage(...)`);
  if (typeof target !== 'string' || target.replace(/\/+/g, '') === '') throw new JobDefinitionError(`${who}: target must be a directory of the storage, e.g. 'savepoints/${group}-1'`);
  if (!(Number.isInteger(maxParallelism) && maxParallelism >= 1)) throw new JobDefinitionError(`${who}: maxParallelism must be the group's, an integer ≥ 1, got ${String(maxParallelism)}`);
  if (!(Number.isFinite(timeout) && timeout > 0)) throw new JobDefinitionError(`${who}: timeout must be a positive number of ms, got ${String(timeout)}`);
  const taken = await storage.read(manifestFile(target)).then(
    () => true,
    (error: unknown) => {
      if (error instanceof CheckpointNotFoundError) return false;
      throw error;
    },
  );
  if (taken) throw new JobDefinitionError(`${who}: '${target}' already holds a group savepoint; give each savepoint a directory of its own`);

  const connection = lazyNatsConnection({ ...connectOptions, servers });
  try {
    const buckets = await openGroup(connection, group);
    const { commits } = buckets;
    const request: SavepointRequest = { id: randomBytes(6).toString('hex'), target, stop, deadline: Date.now() + timeout };
    await commits.put(SAVEPOINT_REQUEST_KEY, JSON.stringify(request));
    const answers = new Map<number, SavepointAnswer>();
    try {
      // Polled rather than watched: answers come at most once per member round, and a poll survives a reconnect as is.
      for (;;) {
        for (const [key, entry] of await buckets.list('commits', savepointAnswerKey(request.id, '*'))) {
          const keyGroup = Number(key.slice(key.lastIndexOf('.') + 1));
          if (answers.has(keyGroup) || !(Number.isInteger(keyGroup) && keyGroup < maxParallelism)) continue;
          answers.set(keyGroup, entry.json<SavepointAnswer>());
        }
        if (answers.size === maxParallelism || Date.now() >= request.deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      // Members ignore a request past its deadline; removed, it is not even read.
      await commits.delete(SAVEPOINT_REQUEST_KEY).catch(() => undefined);
    }
    const failed = [...answers].filter((entry): entry is [number, { member: string; error: string }] => 'error' in entry[1]);
    const missing = Array.from({ length: maxParallelism }, (_, keyGroup) => keyGroup).filter((keyGroup) => !answers.has(keyGroup));
    if (failed.length > 0 || missing.length > 0) {
      const parts = [
        ...(missing.length > 0 ? [`no member answered for key group${missing.length === 1 ? '' : 's'} ${missing.join(', ')} within ${timeout} ms`] : []),
        ...failed.map(([keyGroup, answer]) => `key group ${keyGroup} (member '${answer.member}'): ${answer.error}`),
      ];
      throw new GroupSavepointError(
        `${who} into '${target}' did not complete: ${parts.join('; ')}; check that members run and own every key group (weir inspect --nats … --group ${group}) and that they use ${maxParallelism} key groups, then ask again with another target`,
      );
    }
    const keyGroups: Record<string, string> = {};
    for (const [keyGroup, answer] of [...answers].sort(([a], [b]) => a - b)) keyGroups[String(keyGroup)] = (answer as { path: string }).path;
    const manifest: GroupSavepointManifest = { format: 'weir-group-savepoint', version: 1, group, maxParallelism, keyGroups };
    await storage.write(manifestFile(target), new TextEncoder().encode(JSON.stringify(manifest, null, 2)));
    return { target, keyGroups };
  } finally {
    await connection.close().catch(() => undefined);
  }
}
