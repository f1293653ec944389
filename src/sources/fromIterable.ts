import type { Json, Source, SourceReader } from '../core/types.js';
import { fromSplits } from './fromSplits.js';
import { checkSplitCount, indexRanges, positionOf, rangeOf, rangePosition, rangeStatesAt } from './sourceInternals.js';

/**
 * A source over any iterable that can be iterated again from the start (an array, a Set, a class with
 * `[Symbol.iterator]`): replayable by position, it skips the records already covered by the restored checkpoint.
 * A one-shot generator object cannot be replayed: pass `{ [Symbol.iterator]: () => gen() }` instead. With
 * `{ splits: n }` it is cut into n index ranges read side by side (each subtask iterates up to its range: the
 * iterable is counted once per attempt and skipped through per split).
 * @example job.source(fromIterable(new Set(['a', 'b'])), { uid: 'letters' })
 */
export function fromIterable<T>(iterable: Iterable<T>, options: { splits?: number } = {}): Source<T> {
  const name = 'fromIterable';
  checkSplitCount(name, options.splits);
  if (options.splits === undefined) {
    return {
      name,
      replayable: true,
      open: ({ uid, restoredOffset }) => rangeReader(iterable, positionOf(restoredOffset, uid, name), Number.POSITIVE_INFINITY),
    };
  }
  const count = options.splits;
  return fromSplits<T>(name, {
    list: () => {
      let length = 0;
      for (const _ of iterable) length++;
      return indexRanges(length, count);
    },
    open: (split, { uid, restoredOffset }) => rangeReader(iterable, rangePosition(split, restoredOffset, uid, name), rangeOf(split).to),
    fromOffset: (offset: Json, splits, { uid }) => rangeStatesAt(offset, splits, uid, name),
  });
}

/** Reads the items `[start, end)` of a fresh iteration; its offset counts items from the iterable's start. */
function rangeReader<T>(iterable: Iterable<T>, start: number, end: number): SourceReader<T> {
  const iterator = iterable[Symbol.iterator]();
  let position = 0;
  while (position < start && !iterator.next().done) position++;
  return {
    read(max) {
      const chunk: T[] = [];
      while (chunk.length < max && position + chunk.length < end) {
        const next = iterator.next();
        if (next.done) break;
        chunk.push(next.value);
      }
      position += chunk.length;
      return chunk.length === 0 ? null : chunk;
    },
    offset: () => position,
    close: () => void iterator.return?.(),
  };
}
