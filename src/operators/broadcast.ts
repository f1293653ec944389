import type { Flow } from '../core/flow.js';
import type { MapState, StateDescriptor } from '../core/types.js';

/**
 * A flow whose every record reaches every parallel instance of the operator it is connected to, together with the
 * broadcast state those records update (Flink's broadcast state pattern). Connect it to a keyed flow and apply
 * `processBroadcast`.
 */
export class BroadcastFlow<T> {
  constructor(
    readonly flow: Flow<T>,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any key and value types
    readonly descriptors: readonly StateDescriptor<MapState<any, any>, Map<any, any>>[],
  ) {}
}

/**
 * Broadcasts a flow with the map states it maintains.
 * @example
 * const rules = mapState<string, Rule>('rules');
 * connect(txs.pipe(keyBy((t) => t.account)), ruleUpdates.pipe(broadcast(rules))).pipe(processBroadcast(…, { uid: 'rules' }))
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any key and value types
export function broadcast<T>(...descriptors: StateDescriptor<MapState<any, any>, Map<any, any>>[]): (flow: Flow<T>) => BroadcastFlow<T> {
  return (flow) => new BroadcastFlow(flow, descriptors);
}
