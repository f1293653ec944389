import { JobDefinitionError } from '../../core/errors.js';
import type { StreamElement } from '../../core/elements.js';
import { Flow, KeyedFlow } from '../../core/flow.js';
import { DirectObservable } from '../../task/directObservable.js';
import { checkParallelism } from '../keyedOperate.js';
import { checkMapAsyncOptions, type MapAsyncOptions } from './mapAsyncOptions.js';
import { runMapAsync } from './mapAsyncTask.js';

/**
 * Calls an async function per record (an HTTP enrichment, a database lookup) with at most `capacity` calls in flight,
 * and emits each result: Flink's async I/O (AsyncDataStream.orderedWait / unorderedWait). Results leave in input
 * order by default, or as they complete with `ordered: false` (never across a watermark). A call may time out
 * (`timeout`, with an `onTimeout` fallback) and be retried with a fixed delay or a backoff (`retry`); every wait is
 * on the job's clock. `signal` aborts when the call timed out or the attempt ended.
 *
 * The records still in flight at a checkpoint are saved in it and called again after a restore, so state
 * downstream is exactly-once; `fn` itself may be called more than once for a record across restores (at-least-once
 * towards the service, as in Flink). While the operator is at capacity the sources pause between chunks.
 *
 * One result per record: return an array and follow with `flatMap((results) => results)` for several, or none.
 * On a keyed flow each of `parallelism` instances takes the keys of its key groups (and its saved records on
 * restore, at any parallelism); the result is a plain flow (the results are new values: `keyBy` again to key them).
 * @example
 * const enriched = orders.pipe(
 *   mapAsync(async (order, signal) => ({ ...order, customer: await lookUp(order.customerId, signal) }), {
 *     uid: 'enrich', capacity: 50, ordered: false, timeout: 1_000, retry: { attempts: 3, backoff: { initial: 100, max: 1_000 } },
 *   }),
 * );
 */
export function mapAsync<T, R>(fn: (value: T, signal: AbortSignal) => Promise<R> | R, options: MapAsyncOptions<T, R>): (input: Flow<T>) => Flow<R> {
  const settings = checkMapAsyncOptions(fn, options);
  return (input) => {
    const selectKey = input instanceof KeyedFlow ? (input as KeyedFlow<T>).keySelector : undefined;
    if (selectKey === undefined && options.parallelism !== undefined && options.parallelism !== 1) {
      throw new JobDefinitionError(`mapAsync '${settings.uid}': parallelism ${options.parallelism} needs a keyed flow (put keyBy before it); an unkeyed mapAsync runs one instance`);
    }
    const parallelism = selectKey === undefined ? 1 : checkParallelism('mapAsync', options.parallelism ?? input.graph.defaultParallelism);
    const spec = { fn, settings, selectKey, parallelism };
    const node = input.graph.add({
      kind: 'mapAsync',
      uid: settings.uid,
      role: 'operator',
      // Stateful without keyed state: each instance saves the records in flight at every checkpoint.
      stateful: true,
      parallelism,
      inputs: [input.node],
      build: (task, [upstream]) => new DirectObservable<StreamElement<unknown>>((observer) => runMapAsync(task, upstream!, observer, spec)),
    });
    return new Flow<R>(input.graph, node, input.timestamped);
  };
}
