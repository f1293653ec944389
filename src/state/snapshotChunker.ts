import type { KeyedStatePayload, RemovedEntry, SnapshotEntry, StateMeta } from '../core/types.js';

/**
 * Cuts a stream of snapshot entries, arriving in ascending key-group order, into payloads for
 * `KeyedSnapshot.materializeChunks`: a payload is closed at the first key-group boundary once it holds `maxEntries`
 * entries, and a key group that reaches `maxEntries` entries by itself is cut there and goes on in the next payload.
 * So a payload holds fewer than `2 × maxEntries` entries, and only oversized key groups span payloads. Removed
 * entries (deltas) count as entries. Shared by every backend so that their chunks have the same shape.
 */
export class SnapshotChunker {
  private keyGroups: [number, SnapshotEntry[]][] = [];
  private removed: [number, RemovedEntry[]][] = [];
  private group: SnapshotEntry[] | undefined;
  private removedGroup: RemovedEntry[] | undefined;
  private groupId = -1;
  private groupCount = 0;
  private count = 0;

  constructor(private readonly states: StateMeta[], private readonly maxEntries: number) {}

  /** Adds one entry of `keyGroup`; returns a payload when this closed one. */
  add(keyGroup: number, entry: SnapshotEntry): KeyedStatePayload | undefined {
    const closed = this.advance(keyGroup);
    if (this.group === undefined) this.keyGroups.push([keyGroup, (this.group = [])]);
    this.group.push(entry);
    return closed;
  }

  /** Adds one removed entry of `keyGroup` (a delta's); returns a payload when this closed one. */
  remove(keyGroup: number, entry: RemovedEntry): KeyedStatePayload | undefined {
    const closed = this.advance(keyGroup);
    if (this.removedGroup === undefined) this.removed.push([keyGroup, (this.removedGroup = [])]);
    this.removedGroup.push(entry);
    return closed;
  }

  /** The last payload, if any entries are left. */
  finish(): KeyedStatePayload | undefined {
    return this.count > 0 ? this.take() : undefined;
  }

  private advance(keyGroup: number): KeyedStatePayload | undefined {
    let closed: KeyedStatePayload | undefined;
    if (keyGroup !== this.groupId) {
      if (this.count >= this.maxEntries) closed = this.take();
      this.groupId = keyGroup;
      this.groupCount = 0;
      this.group = this.removedGroup = undefined;
    } else if (this.groupCount >= this.maxEntries) {
      closed = this.take();
      this.groupCount = 0;
    }
    this.groupCount++;
    this.count++;
    return closed;
  }

  private take(): KeyedStatePayload {
    const payload: KeyedStatePayload =
      this.removed.length === 0 ? { states: this.states, keyGroups: this.keyGroups } : { states: this.states, keyGroups: this.keyGroups, removed: this.removed };
    this.keyGroups = [];
    this.removed = [];
    this.group = this.removedGroup = undefined;
    this.count = 0;
    return payload;
  }
}

/** `materialize` in terms of `materializeChunks`: everything in one payload (with the states even when empty). */
export function wholePayload(states: StateMeta[], chunks: Iterable<KeyedStatePayload>): KeyedStatePayload {
  const keyGroups: KeyedStatePayload['keyGroups'] = [];
  let flat: unknown[] | undefined;
  let flatNamespaced: unknown[] | undefined;
  let range: [number, number] | undefined;
  let unbucketed = false;
  const append = (to: unknown[] | undefined, from: unknown[] | undefined) => {
    if (from === undefined) return to;
    if (to === undefined) return from;
    for (let i = 0; i < from.length; i++) to.push(from[i]);
    return to;
  };
  for (const chunk of chunks) {
    for (const group of chunk.keyGroups) keyGroups.push(group);
    if (chunk.flat === undefined && chunk.flatNamespaced === undefined) continue;
    // Pieces with and without a range: the whole has none (readers then hash every key they filter).
    range = !unbucketed ? chunk.range : range && chunk.range && [Math.min(range[0], chunk.range[0]), Math.max(range[1], chunk.range[1])];
    unbucketed = true;
    flat = append(flat, chunk.flat);
    flatNamespaced = append(flatNamespaced, chunk.flatNamespaced);
  }
  if (!unbucketed) return { states, keyGroups };
  return {
    states,
    keyGroups,
    ...(flat === undefined ? {} : { flat }),
    ...(flatNamespaced === undefined ? {} : { flatNamespaced }),
    ...(range === undefined ? {} : { range }),
  };
}
