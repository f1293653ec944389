import { JobDefinitionError } from '../core/errors.js';
import { GLOBAL_WINDOW, WindowCache, gcd, timeWindow, windowStart } from './timeWindow.js';
import { count, eventTimeTrigger, neverTrigger, processingTimeTrigger, purging } from './triggers.js';
import type { Window, WindowAssigner, WindowTime } from './windowTypes.js';

export interface TimeWindowOptions {
  /** Shifts window boundaries, e.g. to align days to a time zone (`|offset| < size`). */
  offset?: number;
  /** `'event-time'` (default: needs `assignTimestamps` upstream) or `'processing-time'` (the job's clock). */
  time?: WindowTime;
}

function options(name: string, offsetOrOptions: number | TimeWindowOptions | undefined): Required<TimeWindowOptions> {
  const { offset = 0, time = 'event-time' } = typeof offsetOrOptions === 'number' ? { offset: offsetOrOptions } : (offsetOrOptions ?? {});
  if (!Number.isFinite(offset)) throw new JobDefinitionError(`${name}: offset must be a finite number of ms, got ${offset}`);
  if (time !== 'event-time' && time !== 'processing-time') throw new JobDefinitionError(`${name}: time must be 'event-time' or 'processing-time', got ${String(time)}`);
  return { offset, time };
}

function positive(name: string, what: string, value: number): void {
  if (!(Number.isFinite(value) && value > 0)) throw new JobDefinitionError(`${name}: ${what} must be a positive number of ms, got ${value}`);
}

function timeTrigger(time: WindowTime) {
  return time === 'event-time' ? eventTimeTrigger() : processingTimeTrigger();
}

/**
 * Fixed-size, non-overlapping windows `[start, start + size)` (Flink's Tumbling*Windows).
 * @example keyed.pipe(window(tumbling(60_000)), reduce(sum, { uid: 'per-minute' }))
 */
export function tumbling(size: number, offsetOrOptions?: number | TimeWindowOptions): WindowAssigner {
  const name = `tumbling(${size})`;
  positive(name, 'size', size);
  const { offset, time } = options(name, offsetOrOptions);
  if (Math.abs(offset) >= size) throw new JobDefinitionError(`${name}: |offset| must be smaller than the size, got ${offset}`);
  let recentStart = Number.NaN;
  let recent: Window[] = [];
  let olderStart = Number.NaN;
  let older: Window[] = [];
  return {
    name,
    time,
    merging: false,
    ...(Number.isInteger(size) && Number.isInteger(offset) ? { aligned: { size, slide: size, offset } } : {}),
    assign(timestamp) {
      const start = windowStart(timestamp, offset, size);
      // Consecutive records mostly fall in the window of the previous one (or, out of order, the one before it):
      // handing out the same frozen window then saves an allocation and its id string per record, and lets the
      // state and timer maps hash that id once.
      if (start === recentStart) return recent;
      if (start === olderStart) return older;
      olderStart = recentStart;
      older = recent;
      recentStart = start;
      recent = Object.freeze([Object.freeze(timeWindow(start, start + size))]) as Window[];
      return recent;
    },
    defaultTrigger: () => timeTrigger(time),
  };
}

/**
 * Windows of `size` starting every `slide` ms, so a record belongs to `size / slide` windows (Flink's Sliding*Windows).
 * @example keyed.pipe(window(sliding(60_000, 10_000)), aggregate(mean, { uid: 'moving-mean' }))
 */
export function sliding(size: number, slide: number, offsetOrOptions?: number | TimeWindowOptions): WindowAssigner {
  const name = `sliding(${size}, ${slide})`;
  positive(name, 'size', size);
  positive(name, 'slide', slide);
  if (slide > size) throw new JobDefinitionError(`${name}: the slide must not be larger than the size (records would fall between windows)`);
  const { offset, time } = options(name, offsetOrOptions);
  if (Math.abs(offset) >= slide) throw new JobDefinitionError(`${name}: |offset| must be smaller than the slide, got ${offset}`);
  // The windows of a record depend only on its slice of gcd(size, slide) ms: records of a slice share one frozen
  // array of shared windows, so a record costs no window object nor id string for windows that already exist.
  // Whole milliseconds only: the gcd of fractions is at the mercy of rounding, and a slice must never straddle a
  // window's start.
  const whole = Number.isInteger(size) && Number.isInteger(slide) && Number.isInteger(offset);
  const length = whole ? gcd(size, slide) : 0;
  const windows = new WindowCache(size);
  const bySlice = new Map<number, Window[]>();
  const windowsAt = (timestamp: number) => {
    const assigned: Window[] = [];
    for (let start = windowStart(timestamp, offset, slide); start > timestamp - size; start -= slide) assigned.push(windows.at(start));
    return assigned;
  };
  return {
    name,
    time,
    merging: false,
    ...(whole ? { aligned: { size, slide, offset } } : {}),
    assign(timestamp) {
      if (!whole) return windowsAt(timestamp);
      const slice = windowStart(timestamp, offset, length);
      let assigned = bySlice.get(slice);
      if (assigned === undefined) {
        if (bySlice.size >= 1024) bySlice.clear();
        bySlice.set(slice, (assigned = Object.freeze(windowsAt(slice)) as Window[]));
      }
      return assigned;
    },
    defaultTrigger: () => timeTrigger(time),
  };
}

/**
 * Session windows: a record opens `[t, t + gap)`, and windows of a key that overlap merge, with their state, so a
 * session ends after `gap` ms without records (Flink's *SessionWindows).
 * @example keyed.pipe(window(session(30 * 60_000)), process(sessionSummary, { uid: 'sessions' }))
 */
export function session(gap: number, options_: { time?: WindowTime } = {}): WindowAssigner {
  const name = `session(${gap})`;
  positive(name, 'gap', gap);
  const { time } = options(name, options_);
  return {
    name,
    time,
    merging: true,
    assign: (timestamp) => [timeWindow(timestamp, timestamp + gap)],
    defaultTrigger: () => timeTrigger(time),
  };
}

/**
 * One window per key for all time; it fires only with a trigger you give (`count(n)`, a custom one).
 * @example keyed.pipe(window(globalWindow(), { trigger: purging(count(10)) }), reduce(sum, { uid: 'per-10' }))
 */
export function globalWindow(): WindowAssigner {
  return { name: 'globalWindow()', time: undefined, merging: false, assign: () => [GLOBAL_WINDOW], defaultTrigger: neverTrigger };
}

/**
 * Count windows (Flink's `countWindow`): every `size` records of a key form a window; with `slide`, a window of the
 * last `size` records fires every `slide` records.
 * @example keyed.pipe(window(countWindow(100)), aggregate(mean, { uid: 'per-100' }))
 */
export function countWindow(size: number, slide?: number): WindowAssigner {
  const name = slide === undefined ? `countWindow(${size})` : `countWindow(${size}, ${slide})`;
  if (!(Number.isInteger(size) && size > 0)) throw new JobDefinitionError(`${name}: size must be a positive integer`);
  if (slide !== undefined && !(Number.isInteger(slide) && slide > 0 && slide <= size)) {
    throw new JobDefinitionError(`${name}: slide must be a positive integer not larger than the size`);
  }
  if (slide === undefined) {
    return { name, time: undefined, merging: false, assign: () => [GLOBAL_WINDOW], defaultTrigger: () => purging(count(size)) };
  }
  return { name, time: undefined, merging: false, assign: () => [GLOBAL_WINDOW], defaultTrigger: () => count(slide), evictToLast: size };
}
