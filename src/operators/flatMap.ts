import type { Flow } from '../core/flow.js';
import { operate } from './operate.js';

/**
 * Maps every record to any number of records (an array or any iterable), emitted in order.
 * @example lines.pipe(flatMap((line) => line.split(/\s+/)))
 */
export function flatMap<T, R>(project: (value: T) => Iterable<R>, options: { uid?: string } = {}): (input: Flow<T>) => Flow<R> {
  return (input) =>
    operate<T, R>(input, {
      kind: 'flatMap',
      uid: options.uid,
      setup: (_task, emit) => ({
        onRecord(value) {
          for (const result of project(value)) emit(result);
        },
      }),
    });
}
