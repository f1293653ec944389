import type { Flow } from '../core/flow.js';
import type { Sink } from '../core/types.js';
import { checkOptions } from '../core/checkOptions.js';

/**
 * Ends a flow in a sink. Give transactional sinks a uid: their pending transactions are saved under it.
 * @example alerts.pipe(sinkTo(mySink, { uid: 'alerts-out' }))
 */
export function sinkTo<T>(sink: Sink<T>, options: { uid?: string } = {}): (input: Flow<T>) => void {
  checkOptions(sink.name, options, ['uid']);
  return (input) => {
    input.graph.add({ kind: 'sink', uid: options.uid, role: 'sink', stateful: true, inputs: [input.node], sink: sink });
  };
}
