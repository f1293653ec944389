import type { Flow } from '../core/flow.js';
import { operate } from './operate.js';
import { checkOptions } from '../core/checkOptions.js';

/**
 * Keeps the records for which `predicate` is true.
 * @example clicks.pipe(filter((c) => c.page !== '/health'))
 */
export function filter<T, S extends T = T>(
  predicate: ((value: T) => value is S) | ((value: T) => boolean),
  options: { uid?: string } = {},
): (input: Flow<T>) => Flow<S> {
  checkOptions('filter', options, ['uid']);
  return (input) =>
    operate<T, S>(input, {
      kind: 'filter',
      uid: options.uid,
      fused: { filter: predicate },
    });
}
