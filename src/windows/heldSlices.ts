import type { Key } from '../core/types.js';

/** The slices, by start, in which one key may hold a value: none before `first`, none after `last`. */
interface Span {
  first: number;
  last: number;
  /** The key holds a value in `last` for sure (a record went there), not only may. */
  lastHeld: boolean;
}

/**
 * Which slices of a sliding window each key may hold a value in, as one span per key. A key mostly holds values in
 * one or two of a window's slices (an auction gets its bids within seconds, a user clicks in bursts), so a firing
 * that reads only the slices of the span costs one map lookup here instead of a state read per slice of the window,
 * most of them finding nothing. The state keeps its layout (one namespace per slice); this is an index beside it,
 * in memory only: after a restore it is rebuilt from the restored timers (`cover`), since every slice holding a value
 * lies in a window the key has a timer in.
 */
export class HeldSlices {
  private readonly spans = new Map<Key, Span>();

  /**
   * Notes that the key now holds a value in the slice starting at `start`. Says whether it held none there before:
   * true or false when the span tells, undefined when only reading the state does (a slice inside the span).
   */
  add(key: Key, start: number): boolean | undefined {
    const span = this.spans.get(key);
    if (span === undefined) {
      this.spans.set(key, { first: start, last: start, lastHeld: true });
      return true;
    }
    if (start > span.last) {
      span.last = start;
      span.lastHeld = true;
      return true;
    }
    if (start === span.last && span.lastHeld) return false;
    if (start < span.first) {
      span.first = start;
      return true;
    }
    return undefined;
  }

  /** The key's span, read-only; undefined when it holds nothing. */
  of(key: Key): Readonly<Span> | undefined {
    return this.spans.get(key);
  }

  /** Forgets the key's slices before `start`, which were cleared; `span` is the key's, as `of` gave it. */
  dropBefore(key: Key, span: Readonly<Span>, start: number): void {
    if (span.last < start) this.spans.delete(key);
    else if (span.first < start) (span as Span).first = start;
  }

  /** Widens the key's span to `[first, last]`, where it may hold values (restored state, read from its timers). */
  cover(key: Key, first: number, last: number): void {
    const span = this.spans.get(key);
    if (span === undefined) this.spans.set(key, { first, last, lastHeld: false });
    else {
      if (first < span.first) span.first = first;
      if (last > span.last) {
        span.last = last;
        span.lastHeld = false;
      }
    }
  }
}
