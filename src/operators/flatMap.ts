import type { Flow } from '../core/flow.js';
import { operate } from './operate.js';
import { checkOptions } from '../core/checkOptions.js';

/**
 * Maps every record to any number of records (an array or any iterable), emitted in order.
 * @example lines.pipe(flatMap((line) => line.split(/\s+/)))
 */
export function flatMap<T, R>(project: (value: T) => Iterable<R>, options: { uid?: string } = {}): (input: Flow<T>) => Flow<R> {
  checkOptions('flatMap', options, ['uid']);
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
