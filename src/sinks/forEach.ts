import type { Flow } from '../core/flow.js';
import { sinkTo } from './sinkTo.js';

/**
 * Calls a function for every record as it arrives: at-least-once, since records after the last checkpoint are
 * replayed (and seen again) after a restart.
 * @example totals.pipe(forEach((t) => console.log(t)))
 */
export function forEach<T>(callback: (value: T) => void, options: { uid?: string } = {}): (input: Flow<T>) => void {
  return sinkTo<T>(
    {
      name: 'forEach',
      open: () => ({ write: callback, finish: () => undefined, abort: () => undefined }),
    },
    options,
  );
}
