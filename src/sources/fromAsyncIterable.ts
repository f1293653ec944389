import type { Source } from '../core/types.js';
import { positionOf } from './sourceInternals.js';

/**
 * A source over an async iterable that can be iterated again from the start (each `[Symbol.asyncIterator]()` call
 * starts over): replayable by position, like `fromIterable`. Reads wait for the iterable, so slow producers do not
 * block the job.
 * @example job.source(fromAsyncIterable({ [Symbol.asyncIterator]: () => readLines() }), { uid: 'lines' })
 */
export function fromAsyncIterable<T>(iterable: AsyncIterable<T>): Source<T> {
  const name = 'fromAsyncIterable';
  return {
    name,
    replayable: true,
    async open({ uid, restoredOffset }) {
      const iterator = iterable[Symbol.asyncIterator]();
      let position = 0;
      const skip = positionOf(restoredOffset, uid, name);
      while (position < skip && !(await iterator.next()).done) position++;
      let done = false;
      return {
        async read(max) {
          if (done) return null;
          const chunk: T[] = [];
          while (chunk.length < max) {
            const next = await iterator.next();
            if (next.done) {
              done = true;
              break;
            }
            chunk.push(next.value);
          }
          // The offset moves only once the whole chunk is handed over, as the SourceReader contract requires.
          position += chunk.length;
          return chunk.length === 0 ? null : chunk;
        },
        offset: () => position,
        close: () => void iterator.return?.(),
      };
    },
  };
}
