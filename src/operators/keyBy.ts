import { Flow, KeyedFlow } from '../core/flow.js';
import type { Key } from '../core/types.js';

/**
 * Partitions a flow by key, like Flink's `keyBy`: the keyed operator that follows keeps state per key. Keys must be
 * strings, finite numbers, booleans or bigints. `keyBy` adds no operator of its own; the key is computed once per
 * record by the keyed operator after it.
 * @example clicks.pipe(keyBy((c) => c.user), reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'per-user' }))
 */
export function keyBy<T>(selector: (value: T) => Key): (input: Flow<T>) => KeyedFlow<T> {
  return (input) => new KeyedFlow<T>(input.graph, input.node, selector, input.timestamped);
}
