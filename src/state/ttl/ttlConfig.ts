import type { StateClock, StateTtlConfig } from '../../core/types.js';

/** A TTL configuration with its defaults filled in. */
export interface ResolvedTtl {
  readonly ttl: number;
  readonly updateOnRead: boolean;
  readonly returnExpired: boolean;
  readonly fullSnapshot: boolean;
  readonly incremental: number;
  readonly eventTime: boolean;
}

const UPDATES = ['on-create-and-write', 'on-read-and-write'];
const VISIBILITIES = ['never-return-expired', 'return-expired-if-not-cleaned-up'];
const CHARACTERISTICS = ['processing-time', 'event-time'];

/** Checks a descriptor's `ttl` option when the descriptor is made, so a bad one fails at job definition. */
export function checkTtl(name: string, config: StateTtlConfig | undefined): void {
  if (config === undefined) return;
  const bad = (what: string) => new TypeError(`state '${name}': ttl.${what}`);
  if (config === null || typeof config !== 'object') throw new TypeError(`state '${name}': ttl must be an object like { ttl: 60_000 }`);
  if (typeof config.ttl !== 'number' || !(config.ttl > 0)) throw bad(`ttl must be a number of ms > 0, got ${String(config.ttl)}`);
  if (config.update !== undefined && !UPDATES.includes(config.update)) throw bad(`update must be one of ${UPDATES.join(', ')}, got ${String(config.update)}`);
  if (config.visibility !== undefined && !VISIBILITIES.includes(config.visibility)) {
    throw bad(`visibility must be one of ${VISIBILITIES.join(', ')}, got ${String(config.visibility)}`);
  }
  if (config.timeCharacteristic !== undefined && !CHARACTERISTICS.includes(config.timeCharacteristic)) {
    throw bad(`timeCharacteristic must be one of ${CHARACTERISTICS.join(', ')}, got ${String(config.timeCharacteristic)}`);
  }
  const incremental = config.cleanup?.incremental;
  if (incremental !== undefined && !(Number.isInteger(incremental) && incremental >= 0)) {
    throw bad(`cleanup.incremental must be an integer ≥ 0 (keys checked per access), got ${String(incremental)}`);
  }
}

export function resolveTtl(config: StateTtlConfig): ResolvedTtl {
  return {
    ttl: config.ttl,
    updateOnRead: config.update === 'on-read-and-write',
    returnExpired: config.visibility === 'return-expired-if-not-cleaned-up',
    fullSnapshot: config.cleanup?.fullSnapshot ?? false,
    incremental: config.cleanup?.incremental ?? 0,
    eventTime: config.timeCharacteristic === 'event-time',
  };
}

/** Whether two TTL configurations mean the same, so that two descriptors of one state may both be used. */
export function sameTtl(a: StateTtlConfig, b: StateTtlConfig): boolean {
  return JSON.stringify(resolveTtl(a)) === JSON.stringify(resolveTtl(b));
}

/**
 * The time a TTL state stamps and checks values with, kept within safe integers: timestamps go into snapshots as
 * JSON (where ±Infinity would not survive), and an end-of-input watermark must still expire everything.
 */
export function ttlNow(clock: StateClock, config: ResolvedTtl): number {
  const now = config.eventTime ? clock.eventTime() : clock.processingTime();
  return Math.min(Math.max(now, Number.MIN_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
}

/** Flink's expiry test, `lastAccess + ttl <= now`, without overflowing for a huge ttl. */
export function isExpired(lastAccess: number, config: ResolvedTtl, now: number): boolean {
  return Math.min(lastAccess + config.ttl, Number.MAX_SAFE_INTEGER) <= now;
}
