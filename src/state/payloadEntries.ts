import { keyGroupOf } from '../core/keyGroups.js';
import type { KeyGroupRange, KeyedStatePayload, SnapshotEntry } from '../core/types.js';
import { decodeKey } from './keyCodec.js';

export interface PayloadEntryOptions {
  /** The key groups of the job (the snapshot's `maxParallelism`): how an unbucketed entry's key group is computed. */
  readonly maxParallelism: number;
  /** Only entries of these key groups (all by default). */
  readonly range?: KeyGroupRange;
  /** Always pass each entry's key group; otherwise unbucketed entries that need no filtering get -1 (no hashing). */
  readonly keyGroups?: boolean;
}

/** Number of unbucketed entries (`flat` and `flatNamespaced`, see `KeyedStatePayload`) of a payload. */
export function unbucketedCount(payload: KeyedStatePayload): number {
  return (payload.flat?.length ?? 0) / 3 + (payload.flatNamespaced?.length ?? 0) / 4;
}

/**
 * Visits the entries of a keyed payload whose key group lies in `options.range`, with their key group: bucketed
 * ones (`keyGroups`) first, then unbucketed ones (`flat`, then `flatNamespaced`, each passed as a `SnapshotEntry`).
 * The one way every reader of payloads (restores, the State Processor API, the inspector, queries) sees entries, so
 * that all forms are read alike. The key group of an unbucketed entry is computed (its key hashed) only when the
 * range does not cover the payload's or when asked for.
 */
export function forEachPayloadEntry(
  payload: KeyedStatePayload,
  options: PayloadEntryOptions,
  visit: (entry: SnapshotEntry, keyGroup: number) => void,
): void {
  const { range } = options;
  for (const [keyGroup, entries] of payload.keyGroups) {
    if (range !== undefined && (keyGroup < range.start || keyGroup > range.end)) continue;
    for (const entry of entries) visit(entry, keyGroup);
  }
  const flat = payload.flat ?? [];
  const namespaced = payload.flatNamespaced ?? [];
  if (flat.length === 0 && namespaced.length === 0) return;
  const inRange = unbucketedInRange(payload, range);
  if (inRange === 'none') return;
  const covered = inRange === 'all';
  const hashing = !covered || options.keyGroups === true;
  const { maxParallelism } = options;
  const emit = (entry: SnapshotEntry) => {
    if (!hashing) return visit(entry, -1);
    const keyGroup = keyGroupOf(decodeKey(entry[1]), maxParallelism);
    if (covered || (keyGroup >= range!.start && keyGroup <= range!.end)) visit(entry, keyGroup);
  };
  for (let i = 0; i + 2 < flat.length; i += 3) emit([flat[i] as number, flat[i + 1], flat[i + 2]]);
  for (let i = 0; i + 3 < namespaced.length; i += 4) emit([namespaced[i] as number, namespaced[i + 1], namespaced[i + 2], namespaced[i + 3] as string]);
}

/**
 * Whether the unbucketed entries of a payload lie in `range` by the payload's own range alone: `all` (no key to
 * hash), `none`, or `some` (each key's group decides).
 */
export function unbucketedInRange(payload: KeyedStatePayload, range: KeyGroupRange | undefined): 'all' | 'some' | 'none' {
  const own = payload.range;
  if (range === undefined) return 'all';
  if (own === undefined) return 'some';
  if (own[1] < range.start || own[0] > range.end) return 'none';
  return own[0] >= range.start && own[1] <= range.end ? 'all' : 'some';
}

/** Number of entries (bucketed and not) in a payload, removals left out. */
export function payloadEntryCount(payload: KeyedStatePayload): number {
  let count = unbucketedCount(payload);
  for (const [, entries] of payload.keyGroups) count += entries.length;
  return count;
}
