import type { Window } from './windowTypes.js';

/** The window `[start, end)`. */
export function timeWindow(start: number, end: number): Window {
  return { start, end, maxTimestamp: end - 1, id: `${start}:${end}` };
}

/** The one window of `globalWindow()`: it never ends, so only a custom or count trigger fires it. */
export const GLOBAL_WINDOW: Window = {
  start: Number.MIN_SAFE_INTEGER,
  end: Number.MAX_SAFE_INTEGER,
  maxTimestamp: Number.MAX_SAFE_INTEGER,
  id: 'global',
};

/** Parses a window id back into its window, for timers and state restored from a snapshot. */
export function windowOfId(id: string): Window {
  if (id === GLOBAL_WINDOW.id) return GLOBAL_WINDOW;
  const colon = id.indexOf(':');
  return timeWindow(Number(id.slice(0, colon)), Number(id.slice(colon + 1)));
}

/**
 * Flink's TimeWindow.getWindowStartWithOffset: the start of the window of `size` (shifted by `offset`) holding
 * `timestamp`, correct for negative timestamps too.
 */
export function windowStart(timestamp: number, offset: number, size: number): number {
  const remainder = (timestamp - offset) % size;
  return remainder < 0 ? timestamp - (remainder + size) : timestamp - remainder;
}

/** The greatest common divisor of two window lengths: the length of the slices that tile both. */
export function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/**
 * The windows of one length by their start, built once and shared by every key and record: a record then costs no
 * window object and no id string (whose hash the state and timer maps would compute again). Only the windows near
 * the watermark are in use, so the cache is dropped wholesale when it grows past `limit`.
 */
export class WindowCache {
  private readonly byStart = new Map<number, Window>();

  constructor(
    private readonly length: number,
    private readonly limit = 4096,
  ) {}

  /** The window handed out last: consecutive records mostly fall in the same one. */
  private last: Window | undefined;

  at(start: number): Window {
    if (this.last?.start === start) return this.last;
    let window = this.byStart.get(start);
    if (window === undefined) {
      if (this.byStart.size >= this.limit) this.byStart.clear();
      this.byStart.set(start, (window = Object.freeze(timeWindow(start, start + this.length))));
    }
    this.last = window;
    return window;
  }
}
