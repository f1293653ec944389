import type { KeyedStatePayload, SnapshotEntry, StateMeta } from '../core/types';

/**
 * Cuts a stream of snapshot entries, arriving in ascending key-group order, into payloads for
 * `KeyedSnapshot.materializeChunks`: a payload is closed at the first key-group boundary once it holds `maxEntries`
 * entries, and a key group that reaches `maxEntries` entries by itself is cut there and goes on in the next payload.
 * So a payload holds fewer than `2 × maxEntries` entries, and only oversized key groups span payloads. Shared by
 * every backend so that their chunks have the same shape.
 */
export class SnapshotChunker {
  private keyGroups: [number, SnapshotEntry[]][] = [];
  private group: SnapshotEntry[] | undefined;
  private groupId = -1;
  private count = 0;

  constructor(private readonly states: StateMeta[], private readonly maxEntries: number) {}

  /** Adds one entry of `keyGroup`; returns a payload when this closed one. */
  add(keyGroup: number, entry: SnapshotEntry): KeyedStatePayload | undefined {
    let closed: KeyedStatePayload | undefined;
    if (keyGroup !== this.groupId || this.group === undefined) {
      if (this.count >= this.maxEntries) closed = this.take();
      this.groupId = keyGroup;
      this.keyGroups.push([keyGroup, (this.group = [])]);
    } else if (this.group.length >= this.maxEntries) {
      closed = this.take();
      this.keyGroups.push([keyGroup, (this.group = [])]);
    }
    this.group.push(entry);
    this.count++;
    return closed;
  }

  /** The last payload, if any entries are left. */
  finish(): KeyedStatePayload | undefined {
    return this.count > 0 ? this.take() : undefined;
  }

  private take(): KeyedStatePayload {
    const payload = { states: this.states, keyGroups: this.keyGroups };
    this.keyGroups = [];
    this.group = undefined;
    this.count = 0;
    return payload;
  }
}

/** `materialize` in terms of `materializeChunks`: everything in one payload (with the states even when empty). */
export function wholePayload(states: StateMeta[], chunks: Iterable<KeyedStatePayload>): KeyedStatePayload {
  const keyGroups: KeyedStatePayload['keyGroups'] = [];
  for (const chunk of chunks) keyGroups.push(...chunk.keyGroups);
  return { states, keyGroups };
}
