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
