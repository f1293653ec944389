import { JobDefinitionError } from '../core/errors.js';
import type { Flow, KeyedFlow } from '../core/flow.js';
import type { KeySelector } from '../core/graph.js';
import type { Json, MapState, StateDescriptor } from '../core/types.js';
import { BroadcastFlow } from './broadcast.js';
import type { ConnectedFlows } from './connect.js';
import { coProcessOperator } from './coProcessInternals.js';
import { restoredState } from './operateMulti.js';
import { checkStates } from './keyedOperate.js';
import type { Output, ProcessContext, ProcessOptions, TimerContext } from './processFunction.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any key and value types
type MapDescriptor = StateDescriptor<MapState<any, any>, Map<any, any>>;

/** Broadcast state as the keyed side sees it: read-only, so every key sees the same rules. */
export interface ReadOnlyBroadcastState<K, V> {
  get(key: K): V | undefined;
  contains(key: K): boolean;
  entries(): [K, V][];
}

export interface KeyedBroadcastContext extends ProcessContext {
  broadcastState<K, V>(descriptor: StateDescriptor<MapState<K, V>, Map<K, V>>): ReadOnlyBroadcastState<K, V>;
}

export interface BroadcastContext {
  /** The broadcast state, writable from the broadcast side. */
  broadcastState<K, V>(descriptor: StateDescriptor<MapState<K, V>, Map<K, V>>): MapState<K, V>;
  readonly timestamp: number | undefined;
}

/** Flink's KeyedBroadcastProcessFunction. */
export interface BroadcastProcessFunction<T, B, R> {
  onElement(value: T, ctx: KeyedBroadcastContext, out: Output<R>): void;
  onBroadcastElement(value: B, ctx: BroadcastContext, out: Output<R>): void;
  onTimer?(time: number, ctx: TimerContext, out: Output<R>): void;
}

/**
 * The broadcast state pattern: records of the keyed flow are processed with their key's state and read-only access
 * to the broadcast state; records of the broadcast flow update the broadcast state. Broadcast state is operator
 * state, saved once per checkpoint (every parallel instance holds the same).
 * @example
 * const rules = mapState<string, number>('limits');
 * connect(txs.pipe(keyBy((t) => t.account)), limits.pipe(broadcast(rules))).pipe(processBroadcast({
 *   onElement(t, ctx, out) { if (t.amount > (ctx.broadcastState(rules).get(t.kind) ?? Infinity)) out.emit(t); },
 *   onBroadcastElement(l, ctx) { ctx.broadcastState(rules).put(l.kind, l.max); },
 * }, { uid: 'limits' }))
 */
export function processBroadcast<T, B, R>(fn: BroadcastProcessFunction<T, B, R>, options: Pick<ProcessOptions, 'uid' | 'states'> = {}): (connected: ConnectedFlows<T, B>) => Flow<R> {
  return (connected) => {
    const { first, second } = connected;
    if (!(second instanceof BroadcastFlow)) throw new JobDefinitionError('processBroadcast: connect a keyed flow with a broadcast flow (flow.pipe(broadcast(descriptor)))');
    const keyed = first as KeyedFlow<T>;
    const descriptors = second.descriptors as readonly MapDescriptor[];
    return coProcessOperator<R>([first, second.flow], {
      kind: 'processBroadcast',
      uid: options.uid,
      states: checkStates('processBroadcast', options.states, true),
      keySelectors: [keyed.keySelector as KeySelector<unknown>, undefined],
      setup({ task, ctx, out }) {
        const saved = restoredState(task) as { broadcast?: Record<string, Json> } | undefined;
        const maps = new Map<string, Map<unknown, unknown>>();
        for (const descriptor of descriptors) {
          const encoded = saved?.broadcast?.[descriptor.name];
          maps.set(descriptor.name, encoded === undefined ? new Map() : descriptor.serializer.decode(encoded, descriptor.serializer.version));
        }
        const mapOf = (descriptor: MapDescriptor) => {
          const map = maps.get(descriptor.name);
          if (map === undefined) {
            throw new JobDefinitionError(`operator '${task.uid}': broadcast state '${descriptor.name}' was not declared in broadcast(…)`);
          }
          return map;
        };
        const keyedCtx = Object.create(ctx, {
          broadcastState: { value: (descriptor: MapDescriptor) => readOnly(mapOf(descriptor)) },
        }) as KeyedBroadcastContext;
        const broadcastCtx: BroadcastContext = {
          broadcastState: (descriptor) => writable(mapOf(descriptor as MapDescriptor)) as never,
          get timestamp() {
            return task.record.current;
          },
        };
        return {
          onRecord(input, value) {
            if (input === 0) fn.onElement(value as T, keyedCtx, out);
            else fn.onBroadcastElement(value as B, broadcastCtx, out);
          },
          onTimer: (time, timerCtx, timerOut) => fn.onTimer?.(time, timerCtx, timerOut),
          // Broadcast state is small by design (rules, configuration): it is encoded at the barrier.
          snapshotOperatorState: () => ({ broadcast: Object.fromEntries(descriptors.map((d) => [d.name, d.serializer.encode(mapOf(d)) as Json])) }),
        };
      },
    });
  };
}

function readOnly<K, V>(map: Map<K, V>): ReadOnlyBroadcastState<K, V> {
  return { get: (key) => map.get(key), contains: (key) => map.has(key), entries: () => Array.from(map) };
}

function writable<K, V>(map: Map<K, V>): MapState<K, V> {
  return {
    get: (key) => map.get(key),
    put: (key, value) => void map.set(key, value),
    putAll: (entries) => {
      for (const [key, value] of entries) map.set(key, value);
    },
    remove: (key) => void map.delete(key),
    contains: (key) => map.has(key),
    entries: () => Array.from(map),
    keys: () => Array.from(map.keys()),
    values: () => Array.from(map.values()),
    isEmpty: () => map.size === 0,
    clear: () => map.clear(),
  };
}
