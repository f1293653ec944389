import type { KV } from '@nats-io/kv';

/** When the keys of a bucket with a TTL run out, as a watch of the bucket saw them written. */
export interface LeaseExpiries {
  /**
   * The latest time (`Date.now()` ms) `key`'s current value can live: when this process received it plus the TTL, so
   * never before the server expires it. Undefined for a key not seen, or deleted.
   */
  expiresAt(key: string): number | undefined;
  /** The latest of `expiresAt` over the keys whose value is `value` (the key-group leases a member holds), if any. */
  lastExpiryOf(value: string): number | undefined;
  /** Stops watching. */
  stop(): void;
}

/**
 * Watches a KV bucket whose entries expire after `ttl` (the scale-out leases), so that a member can act right when a
 * dead member's heartbeat or lease runs out instead of at its next periodic round: the server sends no watch event
 * when it expires an entry by the bucket's `max_age` (NATS 2.9), but it does send each write, and the receipt time of
 * a write plus the TTL bounds its expiry from above on this process's own clock (no clock skew between machines).
 * An explicit delete (a member leaving, a lease handed over) calls `onDelete` at once. A watch that breaks (the
 * server went away) leaves the estimates as they were: the caller keeps its periodic rounds.
 */
export async function watchLeaseExpiries(kv: KV, ttl: number, onDelete: (key: string) => void): Promise<LeaseExpiries> {
  const expiries = new Map<string, { at: number; value: string }>();
  const watch = await kv.watch();
  void (async () => {
    for await (const entry of watch) {
      if (entry.operation === 'PUT') {
        expiries.set(entry.key, { at: Date.now() + ttl, value: entry.string() });
      } else {
        expiries.delete(entry.key);
        onDelete(entry.key);
      }
    }
  })().catch(() => undefined);
  return {
    expiresAt: (key) => expiries.get(key)?.at,
    lastExpiryOf(value) {
      let last: number | undefined;
      for (const expiry of expiries.values()) if (expiry.value === value && !(expiry.at <= (last ?? -Infinity))) last = expiry.at;
      return last;
    },
    stop: () => watch.stop(),
  };
}
