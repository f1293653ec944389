// Redis test support: a key prefix of its own per test file, and its removal afterwards.
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';

export const REDIS_URL = 'redis://127.0.0.1:6379';

/** A prefix no other test uses: `weir-test:<random>:`. */
export function redisTestPrefix(): string {
  return `weir-test:${randomBytes(6).toString('hex')}:`;
}

/** A connected client for setting up and checking a test's keys; its errors are thrown by the commands. */
export async function redisTestClient(url = REDIS_URL) {
  const client = createClient({ url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

export type RedisTestClient = Awaited<ReturnType<typeof redisTestClient>>;

/** Deletes every key under `prefix`. */
export async function deleteRedisKeys(client: RedisTestClient, prefix: string): Promise<void> {
  for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) if (keys.length > 0) await client.del(keys);
}

/** Appends `count` entries to `stream`, `fields(i)` each, in one pipeline; returns their ids. */
export async function addEntries(client: RedisTestClient, stream: string, count: number, fields: (i: number) => Record<string, string>): Promise<string[]> {
  const multi = client.multi();
  for (let i = 0; i < count; i++) multi.xAdd(stream, '*', fields(i));
  return (await multi.exec()) as unknown as string[];
}

/** Every entry of `stream`, in order. */
export async function readEntries(client: RedisTestClient, stream: string): Promise<{ id: string; message: Record<string, string> }[]> {
  return ((await client.xRange(stream, '-', '+')) ?? []) as { id: string; message: Record<string, string> }[];
}
