import type { Flow } from '../core/flow.js';
import { operate } from './operate.js';
import { checkOptions } from '../core/checkOptions.js';

/**
 * Applies a function to every record.
 * @example words.pipe(map((w) => w.toLowerCase()))
 */
export function map<T, R>(project: (value: T) => R, options: { uid?: string } = {}): (input: Flow<T>) => Flow<R> {
  checkOptions('map', options, ['uid']);
  return (input) => operate<T, R>(input, { kind: 'map', uid: options.uid, fused: { map: project } });
}
