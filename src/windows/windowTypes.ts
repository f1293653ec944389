import type { Key } from '../core/types.js';

/**
 * A window: `[start, end)` for time windows; the global window spans all time. `maxTimestamp` (`end - 1`) is the
 * last instant it covers: the event-time trigger fires when the watermark reaches it, and its results carry it as
 * their timestamp.
 */
export interface Window {
  readonly start: number;
  readonly end: number;
  readonly maxTimestamp: number;
  /** Identifies the window within a key's state: `<start>:<end>`, or `global`. */
  readonly id: string;
}

export type WindowTime = 'event-time' | 'processing-time';

/** Assigns records to windows (Flink's WindowAssigner). */
export interface WindowAssigner {
  /** For messages: `tumbling(1000)`. */
  readonly name: string;
  /** Which clock assigns windows; undefined for assigners that ignore time (global, count). */
  readonly time: WindowTime | undefined;
  /** Session windows merge when a record bridges them. */
  readonly merging: boolean;
  /** The windows a record at `timestamp` belongs to. */
  assign(timestamp: number): Window[];
  defaultTrigger(): Trigger;
  /**
   * Tumbling and sliding windows of whole milliseconds: windows of `size` starting every `slide` ms (shifted by
   * `offset`), which lets a pre-aggregating window function keep slices shared by overlapping windows instead of one
   * state per window.
   */
  readonly aligned?: { readonly size: number; readonly slide: number; readonly offset: number };
  /** Count windows keep only the last `size` elements (Flink's CountEvictor). */
  readonly evictToLast?: number;
}

export type TriggerResult = 'continue' | 'fire' | 'purge' | 'fire-and-purge';

/** A value kept per key and window for a trigger, e.g. a count. */
export interface TriggerState<T> {
  get(): T | undefined;
  set(value: T | undefined): void;
}

/** What a trigger can do for the current key and window. */
export interface TriggerContext {
  readonly key: Key;
  readonly currentWatermark: number;
  currentProcessingTime(): number;
  registerEventTimeTimer(time: number): void;
  registerProcessingTimeTimer(time: number): void;
  deleteEventTimeTimer(time: number): void;
  deleteProcessingTimeTimer(time: number): void;
  /** State of this trigger for the current key and window (or another `window` of the key, when merging). */
  state<T>(name: string, window?: Window): TriggerState<T>;
}

/**
 * Decides when a window's contents are emitted (Flink's Trigger). Implement it for custom firing rules; each method
 * returns what to do with the window now. `clear` removes whatever the trigger registered for a window when the
 * window is purged for good.
 */
export interface Trigger {
  readonly name: string;
  onElement(timestamp: number, window: Window, ctx: TriggerContext): TriggerResult;
  onEventTime(time: number, window: Window, ctx: TriggerContext): TriggerResult;
  onProcessingTime(time: number, window: Window, ctx: TriggerContext): TriggerResult;
  /**
   * Merging windows (sessions): `window` replaces `merged`; combine their trigger state into `window`'s and register
   * its timers. `clear` is called for each merged window afterwards.
   */
  onMerge?(window: Window, merged: readonly Window[], ctx: TriggerContext): void;
  clear(window: Window, ctx: TriggerContext): void;
}
