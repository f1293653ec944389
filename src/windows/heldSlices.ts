import type { Key, KeyedStateBackend } from '../core/types.js';
import type { WindowSlicing } from './windowFunction.js';
import { WindowEndSweep, type Swept } from './windowEndSweep.js';

/** What one key holds of a sliding window's slices. */
export interface Span extends Swept {
  readonly key: Key;
  /** No slice before `first` nor after `last` (by start) holds a value of the key; those between may. */
  first: number;
  last: number;
  /** The key holds a value in `last` for sure (a record went there), not only may. */
  lastHeld: boolean;
  /** The partial result of the key's records in the slice at `pendingStart` not yet added to the state. */
  pending: unknown;
  pendingStart: number;
  /** The namespace of that slice. */
  pendingId: string;
  /** The state holds nothing of that slice for the key: `pending` is all there is of it. */
  pendingAlone: boolean;
}

/**
 * The slices of a sliding window each key holds values in, kept in memory beside the state (whose layout stays one
 * namespace per slice), for three savings:
 * - a key mostly holds values in one or two of a window's slices (an auction gets its bids within seconds, a user
 *   clicks in bursts), so a firing reads only the slices between `first` and `last` of one span instead of every
 *   slice of the window, most of them empty;
 * - the records of a key in its newest slice are combined here (`pending`) and reach the state once, when the key
 *   moves on to another slice or a snapshot is taken (Flink's window buffer, which its slice-based window aggregation
 *   flushes before a barrier), instead of a state read and write per record; a firing reads them here. A new key's
 *   first slice is kept here from its first record on (a key mostly gets its records in one or two slices: an
 *   auction's bids come within seconds), so such a key reaches the state at a snapshot only;
 * - the spans are what fires: `sweep` holds each at the window ends it fires at, in place of a timer per key and
 *   window.
 * After a restore the spans are rebuilt from the restored timers (`cover`): every slice holding a value lies in a
 * window the key has a timer in.
 */
export class HeldSlices<T> {
  private readonly spans = new Map<Key, Span>();
  readonly sweep = new WindowEndSweep<Span>();
  /** Map lookups this index cost, and state accesses it saved: whether it pays for the keys it sees. */
  lookups = 0;
  saved = 0;

  constructor(
    private readonly backend: KeyedStateBackend,
    private readonly state: { add(value: T): void; get(): unknown },
    private readonly slicing: WindowSlicing<T>,
  ) {}

  /**
   * Adds a record of the current key `key` to the slice at `start` (namespace `id`); gives the key's span when the
   * key held nothing there before (its first window then has to fire), else undefined. May leave the backend in
   * another namespace.
   */
  add(key: Key, start: number, id: string, value: T): Span | undefined {
    this.lookups++;
    let span = this.spans.get(key);
    if (span === undefined) {
      this.spans.set(key, (span = newSpan(key, start, start, true)));
      span.pending = this.slicing.accumulate(undefined, value);
      span.pendingStart = start;
      span.pendingId = id;
      span.pendingAlone = true;
      return span;
    }
    if (span.pendingStart === start) {
      span.pending = this.slicing.accumulate(span.pending, value);
      // A state read and write.
      this.saved += 2;
      return undefined;
    }
    this.flush(span);
    if (start === span.last && span.lastHeld) {
      // The key's second record in its newest slice: it has several there, which are combined here from now on. A
      // key with one record per slice (short slices, many keys) writes it through and pays nothing for this.
      span.pending = this.slicing.accumulate(undefined, value);
      span.pendingStart = start;
      span.pendingId = id;
      span.pendingAlone = false;
      return undefined;
    }
    let fresh: boolean;
    if (start > span.last) {
      span.last = start;
      span.lastHeld = true;
      fresh = true;
    } else if (start < span.first) {
      span.first = start;
      fresh = true;
    } else {
      this.backend.setCurrentNamespace(id);
      fresh = this.state.get() === undefined;
    }
    this.write(id, value);
    return fresh ? span : undefined;
  }

  private write(id: string, value: T): void {
    this.backend.setCurrentNamespace(id);
    this.state.add(value);
  }

  /** The key's span, read-only; undefined when it holds nothing. */
  of(key: Key): Readonly<Span> | undefined {
    this.lookups++;
    return this.spans.get(key);
  }

  /** Adds everything pending to the state, before a snapshot (or anything else reading the state) sees it. */
  flushAll(): void {
    const current = this.backend.getCurrentKey();
    for (const [key, span] of this.spans) {
      if (span.pending === undefined) continue;
      this.backend.setCurrentKey(key);
      this.flush(span);
    }
    if (current !== undefined) this.backend.setCurrentKey(current);
    this.backend.setCurrentNamespace('');
  }

  private flush(span: Span): void {
    if (span.pending === undefined) return;
    this.backend.setCurrentNamespace(span.pendingId);
    this.state.add(this.slicing.toAdd(span.pending));
    span.pending = undefined;
    span.pendingAlone = false;
    span.pendingStart = Number.NaN;
  }

  /** Makes the key of `span` fire the window ending at `end`. */
  fireAt(span: Readonly<Span>, end: number): void {
    this.sweep.add(span, end);
  }

  /** Forgets the key's slices before `start`, which were cleared; `span` is the key's, as `of` gave it. */
  dropBefore(key: Key, span: Readonly<Span>, start: number): void {
    const held = span as Span;
    if (held.pendingStart < start) {
      held.pending = undefined;
      held.pendingStart = Number.NaN;
    }
    if (held.last < start) {
      this.spans.delete(key);
      // Still listed at later ends of the sweep, where it holds nothing: a new span of the key fires there itself.
      held.gone = true;
    } else if (held.first < start) held.first = start;
  }

  /** Widens the key's span to `[first, last]`, where it may hold values (restored state, read from its timers). */
  cover(key: Key, first: number, last: number): Readonly<Span> {
    let span = this.spans.get(key);
    if (span === undefined) this.spans.set(key, (span = newSpan(key, first, last, false)));
    else {
      if (first < span.first) span.first = first;
      if (last > span.last) {
        span.last = last;
        span.lastHeld = false;
      }
    }
    return span;
  }
}

/**
 * A span built by a constructor, not an object literal: a literal is copied from a boilerplate whose map V8 does not
 * update, so once a field's representation widened (a key or a start read from a double field is a heap number, not
 * a small integer) every new span began on the deprecated map and was migrated at its first store, about 5 000
 * instructions each (12 000 spans per 200 000 Nexmark Q5 events).
 */
class HeldSpan implements Span {
  pending: unknown = undefined;
  pendingStart = Number.NaN;
  pendingId = '';
  pendingAlone = false;
  gone = false;
  addedAt = Number.NaN;
  firedAt = Number.NaN;

  constructor(
    readonly key: Key,
    public first: number,
    public last: number,
    public lastHeld: boolean,
  ) {}
}

function newSpan(key: Key, first: number, last: number, lastHeld: boolean): Span {
  return new HeldSpan(key, first, last, lastHeld);
}
