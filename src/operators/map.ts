import type { Flow } from '../core/flow.js';
import { operate } from './operate.js';

/**
 * Applies a function to every record.
 * @example words.pipe(map((w) => w.toLowerCase()))
 */
export function map<T, R>(project: (value: T) => R, options: { uid?: string } = {}): (input: Flow<T>) => Flow<R> {
  return (input) => operate<T, R>(input, { kind: 'map', uid: options.uid, setup: (_task, emit) => ({ onRecord: (value) => emit(project(value)) }) });
}
