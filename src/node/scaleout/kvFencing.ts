import type { KV } from '@nats-io/kv';

/**
 * Whether the server refused a KV create or update because the key's revision was not the one expected: another
 * writer got there first (JetStream API error 10071, "wrong last sequence"). Anything else (a timeout, a lost
 * connection) says nothing about who owns the key.
 */
export function isRevisionConflict(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 10071 || /wrong last sequence/.test(String((error as Error)?.message));
}

/**
 * Creates `key` if nobody holds it (absent, deleted, or expired by the bucket's TTL): the new revision, or undefined
 * when someone else holds the key.
 */
export async function tryCreate(kv: KV, key: string, value: string): Promise<number | undefined> {
  try {
    return await kv.create(key, value);
  } catch (error) {
    if (isRevisionConflict(error)) return undefined;
    throw error;
  }
}
