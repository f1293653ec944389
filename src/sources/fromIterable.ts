import type { Source } from '../core/types.js';
import { positionOf } from './sourceInternals.js';

/**
 * A source over any iterable that can be iterated again from the start (an array, a Set, a class with
 * `[Symbol.iterator]`): replayable by position, it skips the records already covered by the restored checkpoint.
 * A one-shot generator object cannot be replayed: pass `{ [Symbol.iterator]: () => gen() }` instead.
 * @example job.source(fromIterable(new Set(['a', 'b'])), { uid: 'letters' })
 */
export function fromIterable<T>(iterable: Iterable<T>): Source<T> {
  const name = 'fromIterable';
  return {
    name,
    replayable: true,
    open({ uid, restoredOffset }) {
      const iterator = iterable[Symbol.iterator]();
      let position = 0;
      const skip = positionOf(restoredOffset, uid, name);
      while (position < skip && !iterator.next().done) position++;
      return {
        read(max) {
          const chunk: T[] = [];
          while (chunk.length < max) {
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
    },
  };
}
