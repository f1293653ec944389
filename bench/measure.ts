import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { sideBySide as sideBySideSettled } from './sideBySide';

export { addEvents, makeEvents, repeating, type KeyedEvent } from './events';
export { noop, perSecond } from './sideBySide';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Full GC, so that one side's garbage is not collected on the other side's clock. */
export function settleHeap(): void {
  collectGarbage();
  collectGarbage();
}

/**
 * Runs every side `rounds` times after one warm-up round, alternating their order each round, and keeps each
 * side's best figure (`max` for throughputs, `min` for durations); a full GC before every run.
 */
export function sideBySide<K extends string>(
  sides: Record<K, () => number | Promise<number>>,
  options: { rounds: number; best: 'max' | 'min'; warmup?: boolean },
): Promise<Record<K, number>> {
  return sideBySideSettled(sides, { ...options, settle: settleHeap });
}
