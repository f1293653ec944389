import type { StateDescriptor } from '../core/types.js';

/**
 * Merges two values of one state when windows merge (`mergeNamespaces`), by the state's kind: lists concatenated,
 * maps merged (entries of `b` win), reducing and aggregating states combined with their functions; for value state
 * `b` wins. Shared by every backend so that merging windows means the same everywhere.
 */
export function mergeStateValues(descriptor: StateDescriptor<unknown>, a: unknown, b: unknown): unknown {
  switch (descriptor.kind) {
    case 'list':
      return [...(a as unknown[]), ...(b as unknown[])];
    case 'map':
      return new Map([...(a as Map<unknown, unknown>), ...(b as Map<unknown, unknown>)]);
    case 'reducing':
      return descriptor.reduce(a, b);
    case 'aggregating':
      return descriptor.aggregate.merge(a, b);
    case 'value':
      return b;
  }
}
