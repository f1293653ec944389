import type { Key, StateDescriptor } from '../../core/types.js';

/** Marks, in a snapshot's overlay, a key that held no value when the snapshot was taken. */
export const ABSENT = Symbol('absent');

/** Old values of the keys written since a snapshot was taken: `overlay.get(key)` is what the snapshot must see. */
export type Overlay = Map<Key, unknown>;

/**
 * One state's values for every key of a heap backend, with copy-on-write snapshots: taking a snapshot only adds an
 * empty overlay; the first write to a key while the overlay is active saves the key's old value in it. A snapshot
 * therefore costs O(1) on the processing path and O(keys written meanwhile) in memory.
 */
export class StateTable<V> {
  readonly live = new Map<Key, V>();
  /** Overlays of snapshots not yet materialised; usually none, so the write path checks one length. */
  readonly overlays: Overlay[] = [];
  /**
   * Snapshots that have taken this table's keys and values (`captureAsOf`) but still hold its values while they
   * encode them: by the overlay they were taken with, the keys whose live value has since been made a private copy.
   * Writes no longer need to save old values for them; only a value handed out to be changed in place is copied.
   */
  readonly captured = new Map<Overlay, Set<Key>>();
  /** The one set of `captured`, when there is exactly one: what `mutable` checks while a single snapshot encodes. */
  private encoding: Set<Key> | undefined;
  /** With change tracking (incremental checkpoints): the keys written since the last snapshot, shared with the family. */
  changed: Set<Key> | undefined;

  constructor(readonly descriptor: StateDescriptor<unknown, V>, private readonly copy: (value: V) => V) {}

  get(key: Key): V | undefined {
    return this.live.get(key);
  }

  set(key: Key, value: V): void {
    this.changed?.add(key);
    if (this.overlays.length !== 0) this.preserve(key);
    this.live.set(key, value);
  }

  delete(key: Key): void {
    this.changed?.add(key);
    if (this.overlays.length !== 0) this.preserve(key);
    this.live.delete(key);
  }

  /** The key's value, safe to mutate in place: copied first when a pending snapshot still holds the original. */
  mutable(key: Key): V | undefined {
    const value = this.live.get(key);
    // Handed out to be changed in place: with change tracking, the key counts as written.
    if (value !== undefined) this.changed?.add(key);
    // A primitive cannot be changed in place: only a write (which preserves the old value) replaces it.
    if (typeof value !== 'object' || value === null || !this.takeHeld(key)) return value;
    const copy = this.copy(value);
    this.live.set(key, copy);
    return copy;
  }

  /**
   * Whether a pending snapshot still holds the key's live value, which the caller then replaces by a private copy:
   * the old value is saved in the overlays that lack it and the key counted as copied by the snapshots encoding the table.
   */
  private takeHeld(key: Key): boolean {
    const { overlays, captured } = this;
    if (overlays.length === 0) {
      // The common case, one snapshot encoding this table: one insert tells whether the key was copied already,
      // where a lookup and then an insert cost two hash operations on a set of up to every key of the table.
      if (this.encoding !== undefined) {
        const size = this.encoding.size;
        return this.encoding.add(key).size !== size;
      }
      if (captured.size === 0) return false;
    }
    if (!this.needsPreserve(key)) return false;
    this.preserve(key);
    for (const copied of captured.values()) copied.add(key);
    return true;
  }

  private needsPreserve(key: Key): boolean {
    for (const overlay of this.overlays) if (!overlay.has(key)) return true;
    for (const copied of this.captured.values()) if (!copied.has(key)) return true;
    return false;
  }

  private noteCaptured(): void {
    this.encoding = this.captured.size === 1 ? this.captured.values().next().value : undefined;
  }

  /** Whether a snapshot still holds values of this table (pending or being encoded): reads then hand out copies. */
  snapshotting(): boolean {
    return this.overlays.length !== 0 || this.captured.size !== 0;
  }

  /** Ends what the snapshot of `overlay` kept of this table (released, or done). */
  removeOverlay(overlay: Overlay): void {
    const index = this.overlays.indexOf(overlay);
    if (index >= 0) this.overlays.splice(index, 1);
    this.captured.delete(overlay);
    this.noteCaptured();
  }

  private preserve(key: Key): void {
    for (const overlay of this.overlays) {
      if (!overlay.has(key)) overlay.set(key, this.live.has(key) ? this.live.get(key) : ABSENT);
    }
  }

  /** The key's value as it was when `overlay` was added; undefined when it held none. */
  valueAsOf(overlay: Overlay, key: Key): V | undefined {
    const old = overlay.get(key);
    if (old === undefined) return this.live.get(key);
    return old === ABSENT ? undefined : (old as V);
  }

  /**
   * Every key and value as they were when `overlay` was added, for reading piece by piece while writes go on: the
   * keys and values of the table as of then (spread, builtins: no lookup per key), and `missing` the keys removed
   * since, with their old values. Later writes cannot change what this gives: a write replaces the live value, and a
   * value changed in place is copied first (`mutable`), so the spread values stay as they were. From then on the
   * overlay is not written to any more (see `captured`); `removeOverlay` ends it.
   *
   * The keys written since the barrier (the overlay, mostly a few thousand against a table of up to millions) are
   * put back to their old values for the spread, and their live values then again: checking every key against the
   * overlay instead cost ~35 ms per 10⁶ keys. A key added since the barrier is left out by deleting it for the spread;
   * added back, it goes to the end of the table's order, where keys added since the barrier are anyway.
   */
  captureAsOf(overlay: Overlay): { keys: Key[]; values: V[]; missing: [Key, V][] } {
    const index = this.overlays.indexOf(overlay);
    if (index >= 0) {
      this.overlays.splice(index, 1);
      // The keys written since the barrier hold private copies already (a write put its value, `mutable` copied).
      this.captured.set(overlay, new Set(overlay.keys()));
      this.noteCaptured();
    }
    const { live } = this;
    if (overlay.size === 0) return { keys: [...live.keys()], values: [...live.values()], missing: [] };
    const missing: [Key, V][] = [];
    // Key, live value pairs to put back after the spread.
    const current: unknown[] = [];
    overlay.forEach((old, key) => {
      if (!live.has(key)) {
        if (old !== ABSENT) missing.push([key, old as V]);
        return;
      }
      current.push(key, live.get(key));
      if (old === ABSENT) live.delete(key);
      else live.set(key, old as V);
    });
    const keys = [...live.keys()];
    const values = [...live.values()];
    for (let i = 0; i < current.length; i += 2) live.set(current[i] as Key, current[i + 1] as V);
    return { keys, values, missing };
  }
}
