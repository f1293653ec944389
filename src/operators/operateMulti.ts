import { BarrierAligner } from '../task/barrierAligner.js';
import { CancelCheckpointMarker, ControlElement, Watermark, WATERMARK_ACTIVE, WATERMARK_IDLE, type RecordTimestamp, type StreamElement } from '../core/elements.js';
import { ownCopy } from '../core/ownCopy.js';
import { DirectObservable, endOnce } from '../task/directObservable.js';
import { feedAligner } from '../task/alignerInputs.js';
import { JobDefinitionError } from '../core/errors.js';
import { OperatorCounters } from '../core/operatorCounters.js';
import { UserFunctionGuard } from '../core/userFunctionFailure.js';
import { Flow } from '../core/flow.js';
import type { KeySelector, TaskContext } from '../core/graph.js';
import type { AnyStateDescriptor, Json, KeyedSnapshot, KeyedStateBackend } from '../core/types.js';
import { checkKey } from '../state/keyCodec.js';
import { autoSerializer } from '../state/serializers.js';

/** How a multi-input operator handles records for one attempt. */
export interface MultiInputHandler {
  /** A record from input `input`; on keyed operators its key is already current. */
  onRecord(input: number, value: unknown): void;
  /** The combined watermark advanced: fire event-time timers; the watermark is forwarded after. */
  onWatermark?(timestamp: number): void;
  /** Non-keyed state to save, captured synchronously at the barrier. */
  snapshotOperatorState?(): Json;
  dispose?(): void;
}

export interface MultiInputSpec<R> {
  kind: string;
  uid?: string;
  /** The key selector of each input, for keyed operators (`connect` of keyed flows, joins). */
  keySelectors?: (KeySelector<unknown> | undefined)[];
  timestamped?: boolean;
  /** Keyed states the operator declares, registered in its backend before any record (keyed operators only). */
  states?: readonly AnyStateDescriptor[];
  setup(task: TaskContext, emit: (value: R) => void, fail: (error: unknown) => void, backend: KeyedStateBackend | undefined): MultiInputHandler;
}

const records = autoSerializer<unknown>();

/**
 * Adds an operator with several inputs. Their elements meet in a BarrierAligner, which holds records during
 * alignment, combines watermarks (the minimum over active inputs) and says when to snapshot; the operator
 * snapshots its keyed state, its operator state and, for an unaligned checkpoint, the records in flight, which a
 * restore replays before the sources start.
 */
export function operateMulti<R>(inputs: Flow<unknown>[], spec: MultiInputSpec<R>): Flow<R> {
  if (inputs.length < 1) throw new JobDefinitionError(`${spec.kind} needs at least one input flow`);
  const graph = inputs[0]!.graph;
  for (const input of inputs) {
    if (input.graph !== graph) throw new JobDefinitionError(`${spec.kind}: its input flows belong to different jobs; flows cannot cross jobs`);
  }
  const keyed = spec.keySelectors !== undefined;
  const node = graph.add({
    kind: spec.kind,
    uid: spec.uid,
    role: 'operator',
    // Stateful even without state of its own: an unaligned checkpoint saves the records in flight here.
    stateful: true,
    states: spec.states,
    inputs: inputs.map((input) => input.node),
    build: (task, upstreams) =>
      new DirectObservable<StreamElement<unknown>>((observer) => {
        const record = task.record;
        const subscriber = endOnce(observer);
        // The one way a throw of this operator's functions fails the attempt, named after the operator (as in a chain).
        const guard = UserFunctionGuard.of({ job: task.job, uid: task.uid, operator: spec.kind }, (error) => subscriber.error(error));
        const backend = keyed ? task.keyedBackend() : undefined;
        const counters = task.counters ?? new OperatorCounters();
        const emit = (value: unknown) => {
          // Handlers may emit side-output records too: only records count, and they go on as such (see nextRecord).
          if (value instanceof ControlElement) return subscriber.next(value);
          counters.emitted++;
          subscriber.nextRecord(value);
        };
        const handler = guard.attempt(() => spec.setup(task, emit, guard.fail, backend));
        if (handler === undefined) return () => undefined;
        const selectKeys = backend === undefined ? [] : (spec.keySelectors ?? []);
        const deliver = ownCopy(deliverRecord)(record, selectKeys, checkKey, task.uid, backend, counters, handler);
        const aligner = new BarrierAligner(
          upstreams.length,
          task.alignment.mode,
          {
            record: deliver,
            aligned(barrier, inFlight, alignment) {
              task.snapshot(
                barrier,
                () => {
                  const keyedSnapshot: KeyedSnapshot | undefined = backend?.snapshot();
                  const operatorState = handler.snapshotOperatorState?.();
                  return {
                    keyed: keyedSnapshot,
                    // Nothing to save (no state, no records in flight): no state file at all.
                    operator: inFlight.then((records_) =>
                      (operatorState ?? null) === null && records_.length === 0
                        ? undefined
                        : {
                            state: operatorState ?? null,
                            inFlight: records_.map(([input, value, timestamp]) => [input, records.encode(value) as Json, timestamp ?? null]),
                          },
                    ),
                  };
                },
                () => subscriber.next(barrier),
                alignment,
              );
            },
            cancelled(id, reason, by) {
              if (reason === 'subsumed' && by !== undefined) task.decline(id, by);
              subscriber.next(new CancelCheckpointMarker(id));
            },
            watermark(timestamp) {
              task.watermark.current = timestamp;
              handler.onWatermark?.(timestamp);
              subscriber.next(new Watermark(timestamp));
            },
            idle: (idle) => subscriber.next(idle ? WATERMARK_IDLE : WATERMARK_ACTIVE),
            complete: () => subscriber.complete(),
          },
          task.scheduler,
          task.alignment.alignedTimeout,
        );
        // Records saved by an unaligned checkpoint come first after a restore: the sources' offsets are past them.
        const saved = task.restoredOperatorState as { inFlight?: [number, Json, number | null][] } | undefined;
        if (saved?.inFlight?.length) {
          task.beforeSources(() => {
            for (const [input, value, timestamp] of saved.inFlight!) guard.attempt(() => deliver(input, records.decode(value, 1), timestamp ?? undefined));
          });
        }
        const pushElement = (input: number, element: StreamElement<unknown>) => aligner.push(input, element, record.current);
        const stop = feedAligner(
          upstreams,
          aligner,
          subscriber,
          (input, element) => guard.call2(pushElement, input, element),
          (input) => ownCopy(recordInput)(input, subscriber, aligner, deliver, record, guard.fail),
        );
        return () => {
          subscriber.closed = true;
          stop();
          aligner.dispose();
          handler.dispose?.();
        };
      }),
  });
  return new Flow<R>(graph, node, spec.timestamped ?? inputs.every((input) => input.timestamped));
}

/**
 * A record of input `input` to a multi-input operator: its timestamp set, its key made current (keyed operators),
 * then the handler's `onRecord`. Compiled per operator (see `ownCopy`): self-contained.
 */
const deliverRecord =
  (
    record: RecordTimestamp,
    selectKeys: readonly (KeySelector<unknown> | undefined)[],
    check: typeof checkKey,
    uid: string,
    backend: KeyedStateBackend | undefined,
    counters: OperatorCounters,
    handler: MultiInputHandler,
  ) =>
  (input: number, value: unknown, timestamp: number | undefined): void => {
    record.current = timestamp;
    const selectKey = selectKeys[input];
    if (selectKey !== undefined) {
      const key = selectKey(value);
      if (typeof key !== 'string') check(key, uid);
      backend!.setCurrentKey(key);
    }
    counters.recordsIn++;
    handler.onRecord(input, value);
  };

/**
 * The records of one input of a multi-input operator: straight to `deliver` while no checkpoint aligns, through the
 * aligner (which may hold them) while one does; a throw fails the operator through its guard. Compiled per input
 * (see `ownCopy`): self-contained.
 */
const recordInput =
  (
    input: number,
    output: { readonly closed: boolean },
    aligner: BarrierAligner,
    deliver: (input: number, value: unknown, timestamp: number | undefined) => void,
    record: RecordTimestamp,
    fail: (error: unknown) => void,
  ) =>
  (value: unknown): void => {
    if (output.closed) return;
    try {
      if (aligner.aligning) aligner.pushRecord(input, value, record.current);
      else deliver(input, value, record.current);
    } catch (error) {
      fail(error);
    }
  };

/** The operator state a multi-input operator saved itself (its in-flight records are handled above). */
export function restoredState(task: TaskContext): Json | undefined {
  return (task.restoredOperatorState as { state?: Json } | undefined)?.state ?? undefined;
}

/** The operator state every instance of a multi-input operator saved (timers are taken by key group from all). */
export function restoredStates(task: TaskContext): Json[] {
  return task.restoredOperatorStates.map((saved) => (saved as { state?: Json }).state ?? null);
}
