import { Observable } from 'rxjs';
import { CheckpointBarrier, ControlElement, type StreamElement } from '../core/elements';
import { JobDefinitionError } from '../core/errors';
import { Flow, KeyedFlow } from '../core/flow';
import type { TaskContext } from '../core/graph';

/** How an operator handles records for one attempt; everything but `onRecord` is optional. */
export interface OperatorHandler<T> {
  onRecord(value: T): void;
  /** Stateful operators capture their state here; the default forwards the barrier. */
  onBarrier?(barrier: CheckpointBarrier, forward: () => void): void;
  onComplete?(): void;
}

export interface OperatorSpec<T, R> {
  kind: string;
  uid?: string;
  stateful?: boolean;
  /** Called once per attempt when the operator is subscribed; `emit` sends a record downstream. */
  setup(task: TaskContext, emit: (value: R) => void): OperatorHandler<T>;
}

/**
 * Adds a one-input operator to the flow's graph. Its runtime is one closure per attempt; every throw from a user
 * function, on any path, is routed to the subscriber's `error` here, once, so that the job's restart strategy sees
 * it (the role RxJS gives OperatorSubscriber).
 */
export function operate<T, R>(input: Flow<T>, spec: OperatorSpec<T, R>): Flow<R> {
  const node = input.graph.add({
    kind: spec.kind,
    uid: spec.uid,
    role: 'operator',
    stateful: spec.stateful ?? false,
    inputs: [input.node],
    build: (task, upstream) =>
      new Observable<StreamElement<unknown>>((subscriber) => {
        const emit = (value: R) => subscriber.next(value);
        let handler: OperatorHandler<T>;
        try {
          handler = spec.setup(task, emit);
        } catch (error) {
          subscriber.error(error);
          return;
        }
        const forwardTo = (element: ControlElement) => () => subscriber.next(element);
        return upstream.subscribe({
          next(element) {
            try {
              if (element instanceof ControlElement) {
                if (element instanceof CheckpointBarrier && handler.onBarrier) handler.onBarrier(element, forwardTo(element));
                else subscriber.next(element);
              } else {
                handler.onRecord(element as T);
              }
            } catch (error) {
              subscriber.error(error);
            }
          },
          error: (error) => subscriber.error(error),
          complete() {
            try {
              handler.onComplete?.();
            } catch (error) {
              subscriber.error(error);
              return;
            }
            subscriber.complete();
          },
        });
      }),
  });
  return new Flow<R>(input.graph, node);
}

/** The key selector of a keyed flow, or a definition error saying that `keyBy` must come first. */
export function requireKeyed<T>(flow: Flow<T>, operator: string): KeyedFlow<T> {
  if (!(flow instanceof KeyedFlow)) {
    throw new JobDefinitionError(`${operator} needs a keyed flow: put keyBy(record => key) before it`);
  }
  return flow;
}
