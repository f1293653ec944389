import type * as Redis from 'redis';
import { lazyPackage } from '../lazyPackage.js';

/** node-redis, imported when a Redis connector first connects (see lazyPackage). */
const redis = lazyPackage(() => import('redis'));

/** A connected node-redis client, as this connector uses it. */
export type RedisConnection = ReturnType<typeof newClient>;

const newClient = ({ createClient }: typeof Redis, url: string, queueOffline: boolean) => createClient({ url, disableOfflineQueue: !queueOffline });

/**
 * A client connected to `url`. node-redis reconnects by itself after the server went away; its `error` event fires
 * on every failed attempt, and an `error` event without a listener would crash the process, so it is listened to
 * here: the command that needed the server fails or waits, which is where the connector decides. `queueOffline`
 * false makes commands fail at once while the server is away (the sink: a checkpoint should fail, not hang); true
 * makes them wait for the reconnection (the source: reading resumes where it was).
 * @example const client = await connectRedis('redis://127.0.0.1:6379', { queueOffline: true })
 */
export async function connectRedis(url: string, { queueOffline }: { queueOffline: boolean }): Promise<RedisConnection> {
  const client = newClient(await redis.load(), url, queueOffline);
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/**
 * Whether a failed command met a server that is away (a closed socket, a refused connection, a timeout) rather than
 * a server that answered with an error (`WRONGTYPE`, a script error): only the first may succeed when retried.
 */
export function serverAway(error: unknown): boolean {
  const reply = redis.loaded?.ErrorReply;
  return !(reply !== undefined && error instanceof reply);
}

/** Whether `EXEC` failed because a `WATCH`ed key changed (node-redis's `WatchError`): the transaction may be tried again. */
export function watchedKeyChanged(error: unknown): boolean {
  const watch = redis.loaded?.WatchError;
  return watch !== undefined && error instanceof watch;
}

/** Closes a client whatever state it is in; a client that never connected or is already closed is left alone. */
export function closeRedis(client: RedisConnection | undefined): void {
  if (client?.isOpen) client.destroy();
}
