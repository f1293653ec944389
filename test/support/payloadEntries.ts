import { DEFAULT_MAX_PARALLELISM } from '../../src/core/keyGroups';
import type { KeyedStatePayload, SnapshotEntry } from '../../src/core/types';
import { forEachPayloadEntry } from '../../src/state/payloadEntries';

/** Every entry of a payload, bucketed or not (see `KeyedStatePayload.flat`), with its key group. */
export function payloadEntries(payload: KeyedStatePayload, maxParallelism = DEFAULT_MAX_PARALLELISM): { entry: SnapshotEntry; keyGroup: number }[] {
  const all: { entry: SnapshotEntry; keyGroup: number }[] = [];
  forEachPayloadEntry(payload, { maxParallelism, keyGroups: true }, (entry, keyGroup) => all.push({ entry, keyGroup }));
  return all;
}

/** Every entry of a payload, bucketed or not. */
export function allEntries(payload: KeyedStatePayload): SnapshotEntry[] {
  return payloadEntries(payload).map(({ entry }) => entry);
}
