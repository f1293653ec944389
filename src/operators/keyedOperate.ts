import { JobDefinitionError } from '../core/errors.js';
import type { Flow } from '../core/flow.js';
import type { TaskContext } from '../core/graph.js';
import { instanceOfKey } from '../core/keyGroups.js';
import type { AnyStateDescriptor, Json, Key, KeyedStateBackend } from '../core/types.js';
import { ownCopy } from '../core/ownCopy.js';
import { checkKey } from '../state/keyCodec.js';
import { operate, requireKeyed } from './operate.js';
import type { OperatorHandler } from './operatorSpec.js';

/** A keyed operator's handler: `onRecord` runs with the record's key current; operator state joins the snapshot. */
export type KeyedHandler<T> = Omit<OperatorHandler<T>, 'onBarrier'> & {
  /** Non-keyed state to save with the keyed state (timers, watermark), captured synchronously at the barrier. */
  snapshotOperatorState?(): Json;
  /** Moves what the operator keeps in memory into its keyed state before a snapshot captures it (Flink's prepareSnapshotPreBarrier). */
  prepareSnapshot?(): void;
};

export interface KeyedOperatorOptions {
  timestamped?: boolean;
  /** Parallel instances, each with its own state backend over its range of key groups (default 1). */
  parallelism?: number;
  /** Keyed states the operator declares, registered in each instance's backend before any record. */
  states?: readonly AnyStateDescriptor[];
}

/**
 * The `prepareSnapshot` of each operator instance that has one, by its keyed backend: what it keeps in memory beside
 * its state goes there before anything but the operator reads that state (the test harness's `state`). A side table
 * rather than a member of the backend, which is the state backend's contract and knows nothing of operators.
 */
const pendingWrites = new WeakMap<KeyedStateBackend, () => void>();

/** What an instance's onWatermark forwards to: the operator forwards once, after every instance (no closure each). */
const ignore = () => undefined;

/**
 * Moves into `backend`'s state what the operator instance using it keeps in memory (a window's records combined
 * before they reach the state), so that a read of the state from outside the operator sees every record.
 */
export function flushPendingWrites(backend: KeyedStateBackend): void {
  pendingWrites.get(backend)?.();
}

/**
 * A single-instance keyed operator's input: the record's key made current, then the operator's `onRecord`. Compiled
 * per operator (see `ownCopy`): self-contained.
 */
const withKey =
  <T>(selectKey: (value: T) => Key, check: typeof checkKey, uid: string, backend: KeyedStateBackend, onRecord: (value: T) => void) =>
  (value: T): void => {
    const key = selectKey(value);
    // Strings are the common case; anything else is checked (objects would compare by identity).
    if (typeof key !== 'string') check(key, uid);
    backend.setCurrentKey(key);
    onRecord(value);
  };

/** Checks a `parallelism` option against the job's key groups. */
export function checkParallelism(kind: string, parallelism: number | undefined): number {
  const value = parallelism ?? 1;
  if (!(Number.isInteger(value) && value >= 1)) throw new JobDefinitionError(`${kind}: parallelism must be an integer ≥ 1, got ${value}`);
  return value;
}

/**
 * Checks a `states` option: an array of state descriptors, given to an operator whose function has keyed state
 * (`ctx.state`). Undefined when not given.
 */
export function checkStates(kind: string, states: unknown, keyed: boolean): readonly AnyStateDescriptor[] | undefined {
  if (states === undefined) return undefined;
  if (!keyed) {
    throw new JobDefinitionError(
      `${kind}: states lists keyed state, which only a function on a keyed flow (not a window) reads with ctx.state; put keyBy before ${kind}, or leave states out`,
    );
  }
  const isDescriptor = (state: unknown) => typeof (state as AnyStateDescriptor | null)?.name === 'string' && typeof (state as AnyStateDescriptor).kind === 'string';
  if (!Array.isArray(states) || !states.every(isDescriptor)) {
    throw new JobDefinitionError(`${kind}: states must be an array of state descriptors (valueState(…), mapState(…), …)`);
  }
  return states as readonly AnyStateDescriptor[];
}

/**
 * Adds a keyed, stateful operator: for each record it extracts the key once, makes it current in the state
 * backend, then calls `onRecord`; on a barrier it snapshots the backend. Shared by reduce, fold, aggregate, process
 * and windows so that key handling and snapshotting live in one place.
 *
 * With `parallelism` p, the operator runs p instances, as Flink's subtasks: instance i owns key groups
 * `[ceil(i·max/p), floor(((i+1)·max − 1)/p)]`, records are routed by their key's group, and each instance snapshots
 * its own range, so a job restored at another parallelism hands each instance exactly the state of its range.
 * On one thread the instances share it: parallelism models Flink's rescaling; `startJob` spreads them over workers.
 */
export function keyedOperate<T, R>(
  input: Flow<T>,
  kind: string,
  uid: string | undefined,
  setup: (
    backend: KeyedStateBackend,
    emit: (value: R) => void,
    task: TaskContext,
    fail: (error: unknown) => void,
  ) => ((value: T) => void) | KeyedHandler<T>,
  options: KeyedOperatorOptions = {},
): Flow<R> {
  const selectKey = requireKeyed(input, kind).keySelector;
  const parallelism = checkParallelism(kind, options.parallelism ?? input.graph.defaultParallelism);
  return operate<T, R>(input, {
    kind,
    uid,
    stateful: true,
    parallelism,
    timestamped: options.timestamped,
    states: options.states,
    keySelector: selectKey,
    setup(task, emit, fail) {
      // With worker threads, only the instances this thread runs: records of the others' keys never reach it.
      const instances = Array.from({ length: parallelism }, (_, index) => (parallelism === 1 ? task : task.subtask(index)))
        .filter((subtask) => subtask.runsHere)
        .map((subtask) => {
          const backend = subtask.keyedBackend();
          const made = setup(backend, emit, subtask, fail);
          const handler: KeyedHandler<T> = typeof made === 'function' ? { onRecord: made } : made;
          if (handler.prepareSnapshot) pendingWrites.set(backend, () => handler.prepareSnapshot?.());
          return { subtask, backend, handler };
        });
      const snapshot = (barrier: Parameters<NonNullable<OperatorHandler<T>['onBarrier']>>[0], forward: () => void) => {
        if (instances.length === 0) forward();
        instances.forEach(({ subtask, backend, handler }, index) =>
          subtask.snapshot(
            barrier,
            () => {
              handler.prepareSnapshot?.();
              return { keyed: backend.snapshot(), operator: handler.snapshotOperatorState?.() };
            },
            // One barrier goes on, after the last instance captured its state.
            index === instances.length - 1 ? forward : () => undefined,
          ),
        );
      };
      if (parallelism === 1 && instances.length === 1) {
        const { backend, handler } = instances[0]!;
        return { ...handler, onRecord: ownCopy(withKey)(selectKey, checkKey, task.uid, backend, handler.onRecord), onBarrier: snapshot };
      }
      // The instance of each key, computed once per distinct key: hashing costs about as much as a keyed sum.
      const route = new Map<Key, (typeof instances)[number]>();
      const bySubtask = new Map(instances.map((instance) => [instance.subtask.subtaskIndex, instance]));
      const maxParallelism = task.maxParallelism;
      return {
        onRecord(value) {
          const key = selectKey(value);
          let instance = route.get(key);
          if (instance === undefined) {
            if (typeof key !== 'string') checkKey(key, task.uid);
            instance = bySubtask.get(instanceOfKey(key, parallelism, maxParallelism))!;
            route.set(key, instance);
          }
          instance.backend.setCurrentKey(key);
          instance.handler.onRecord(value);
        },
        onBarrier: snapshot,
        onWatermark(watermark, forward) {
          for (const { handler } of instances) handler.onWatermark?.(watermark, ignore);
          forward();
        },
        onSideOutput: (element) => instances.forEach(({ handler }) => handler.onSideOutput?.(element)),
        onComplete: () => instances.forEach(({ handler }) => handler.onComplete?.()),
        dispose: () => instances.forEach(({ handler }) => handler.dispose?.()),
      };
    },
  });
}
