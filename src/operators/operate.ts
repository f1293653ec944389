import { Observable } from 'rxjs';
import { CheckpointBarrier, ControlElement, SideOutputElement, Watermark, type StreamElement } from '../core/elements.js';
import { JobDefinitionError } from '../core/errors.js';
import { userFunctionFailure } from '../core/userFunctionFailure.js';
import { Flow, KeyedFlow } from '../core/flow.js';
import type { TaskContext } from '../core/graph.js';
import type { AnyStateDescriptor } from '../core/types.js';

/** How an operator handles elements for one attempt; everything but `onRecord` is optional. */
export interface OperatorHandler<T> {
  onRecord(value: T): void;
  /** Stateful operators capture their state here; the default forwards the barrier. */
  onBarrier?(barrier: CheckpointBarrier, forward: () => void): void;
  /** Operators with event-time timers fire them here; the default forwards the watermark. */
  onWatermark?(watermark: Watermark, forward: () => void): void;
  /** Side-output readers take their records here; every other operator drops side-output records. */
  onSideOutput?(element: SideOutputElement): void;
  onComplete?(): void;
  /** The attempt is over: cancel timers and other resources. */
  dispose?(): void;
}

export interface OperatorSpec<T, R> {
  kind: string;
  uid?: string;
  stateful?: boolean;
  /** Whether the output carries timestamps; the input's by default. */
  timestamped?: boolean;
  /** Parallel instances of a keyed operator (each acknowledges checkpoints on its own). */
  parallelism?: number;
  /** Keyed states the operator declares, registered in each instance's backend before any record. */
  states?: readonly AnyStateDescriptor[];
  /**
   * Called once per attempt when the operator is subscribed; `emit` sends a record downstream, `fail` fails the
   * attempt from callbacks that run outside record processing (timers).
   */
  setup(task: TaskContext, emit: (value: R) => void, fail: (error: unknown) => void): OperatorHandler<T>;
}

/**
 * Adds a one-input operator to the flow's graph. Its runtime is one closure per attempt; every throw from a user
 * function, on any path, is routed to the subscriber's `error` here, once, as a `UserFunctionError` naming the
 * operator, so that the job's restart strategy sees it (the role RxJS gives OperatorSubscriber). Errors from
 * upstream pass on as they are.
 */
export function operate<T, R>(input: Flow<T>, spec: OperatorSpec<T, R>): Flow<R> {
  const node = input.graph.add({
    kind: spec.kind,
    uid: spec.uid,
    role: 'operator',
    stateful: spec.stateful ?? false,
    parallelism: spec.parallelism,
    states: spec.states,
    inputs: [input.node],
    build: (task, [upstream]) =>
      new Observable<StreamElement<unknown>>((subscriber) => {
        let handler: OperatorHandler<T> | undefined;
        const emit = (value: R) => subscriber.next(value);
        // The one way a throw of this operator's functions fails the attempt: named after the operator.
        const fail = (error: unknown) => subscriber.error(userFunctionFailure(error, { job: task.job, uid: task.uid, operator: spec.kind }));
        try {
          handler = spec.setup(task, emit, fail);
        } catch (error) {
          fail(error);
          return;
        }
        const active = handler;
        const forwardTo = (element: ControlElement) => () => subscriber.next(element);
        const subscription = upstream!.subscribe({
          next(element) {
            try {
              if (!(element instanceof ControlElement)) active.onRecord(element as T);
              else if (element instanceof CheckpointBarrier && active.onBarrier) active.onBarrier(element, forwardTo(element));
              else if (element instanceof Watermark) {
                task.watermark.current = element.timestamp;
                if (active.onWatermark) active.onWatermark(element, forwardTo(element));
                else subscriber.next(element);
              } else if (element instanceof SideOutputElement) active.onSideOutput?.(element);
              else subscriber.next(element);
            } catch (error) {
              fail(error);
            }
          },
          error: (error) => subscriber.error(error),
          complete() {
            try {
              active.onComplete?.();
            } catch (error) {
              fail(error);
              return;
            }
            subscriber.complete();
          },
        });
        return () => {
          subscription.unsubscribe();
          active.dispose?.();
        };
      }),
  });
  return new Flow<R>(input.graph, node, spec.timestamped ?? input.timestamped);
}

/** The key selector of a keyed flow, or a definition error saying that `keyBy` must come first. */
export function requireKeyed<T>(flow: Flow<T>, operator: string): KeyedFlow<T> {
  if (!(flow instanceof KeyedFlow)) {
    throw new JobDefinitionError(`${operator} needs a keyed flow: put keyBy(record => key) before it`);
  }
  return flow;
}

