import type { Observable } from 'rxjs';
import { DirectObservable, endOnce, subscribeTo, type ClosableObserver, type DirectObserver } from '../task/directObservable.js';
import { CheckpointBarrier, ControlElement, SideOutputElement, Watermark, type StreamElement } from '../core/elements.js';
import type { TaskContext } from '../core/graph.js';
import { userFunctionFailure } from '../core/userFunctionFailure.js';
import type { OperatorHandler, OperatorSpec } from './operatorSpec.js';

/** One operator of a chain: its spec and the task it runs as. */
export interface ChainedOperator {
  readonly task: TaskContext;
  readonly spec: OperatorSpec<unknown, unknown>;
}

/** Where a chained operator sends what it emits: the next operator's input, or the chain's observer. */
interface Downstream {
  next(element: StreamElement<unknown>): void;
  complete(): void;
}

/** The chain's end, shared by its operators: closed once it failed, completed or was torn down. */
type ChainEnd = ClosableObserver<StreamElement<unknown>>;

/**
 * Consecutive one-input operators where each is the only consumer of the one before, run as one subscription, as
 * Flink chains operators into one task: an operator hands its output to the next one by a plain call instead of
 * through an RxJS Subscriber, which per record and operator cost more than most operators' own work. Each operator
 * keeps its own handler, error naming, watermark slot and barrier handling; only the hand-over changes. The
 * execution fans a node's output out (`fanOut`) when it has several consumers, so a chain never sees such a node and
 * ends there. A chain reads its input directly when weir produces it (a source, a fan-out, a multi-input operator),
 * and is read directly in turn.
 */
export class OperatorChain extends DirectObservable<StreamElement<unknown>> {
  constructor(
    readonly input: Observable<StreamElement<unknown>>,
    readonly operators: readonly ChainedOperator[],
  ) {
    super((observer) => runChain(input, operators, observer));
  }

  /** `operator` reading `input`: appended to its chain when `input` is one (its node's only consumer is `operator`). */
  static after(input: Observable<StreamElement<unknown>>, operator: ChainedOperator): OperatorChain {
    return input instanceof OperatorChain ? new OperatorChain(input.input, [...input.operators, operator]) : new OperatorChain(input, [operator]);
  }
}

function runChain(
  source: Observable<StreamElement<unknown>>,
  operators: readonly ChainedOperator[],
  observer: DirectObserver<StreamElement<unknown>>,
): () => void {
  const end: ChainEnd = endOnce(observer);
  const handlers: OperatorHandler<unknown>[] = [];
  // Handlers are released in flow order, as the nested subscriptions of unchained operators were.
  const dispose = () => handlers.forEach((handler) => handler.dispose?.());
  let downstream: Downstream = end;
  // Set up from the end, as unchained operators were (each subscribed to its input after its own setup).
  for (let i = operators.length - 1; i >= 0; i--) {
    const link = linkOperator(operators[i]!, downstream, end);
    if (link === undefined) return dispose;
    handlers.unshift(link.handler);
    downstream = link;
  }
  const first = downstream;
  // Elements the input sends after the chain ended are dropped here (a Subscriber would drop them).
  const stop = subscribeTo(source, {
    next: (element) => {
      if (!end.closed) first.next(element);
    },
    error: (error) => end.error(error),
    complete: () => {
      if (!end.closed) first.complete();
    },
  });
  return () => {
    end.closed = true;
    stop();
    dispose();
  };
}

/**
 * One operator's input, sending to `downstream`: every throw of the operator's functions, on any path, fails the
 * chain once, as a `UserFunctionError` naming the operator (the role RxJS gives OperatorSubscriber).
 * Undefined when its setup threw (the chain has failed).
 */
function linkOperator(
  { task, spec }: ChainedOperator,
  downstream: Downstream,
  end: ChainEnd,
): (Downstream & { handler: OperatorHandler<unknown> }) | undefined {
  // Once the chain failed or was torn down, nothing more reaches the operators after this one. The functions a
  // record goes through are read once here: this code is shared by every operator of every job, so a property read
  // per record would be megamorphic (handlers are closures and never use `this`).
  // eslint-disable-next-line @typescript-eslint/unbound-method -- see above: observers here never use `this`
  const { next: sendOn } = downstream;
  const out = (element: StreamElement<unknown>) => {
    if (!end.closed) sendOn(element);
  };
  const fail = (error: unknown) => end.error(userFunctionFailure(error, { job: task.job, uid: task.uid, operator: spec.kind }));
  let handler: OperatorHandler<unknown>;
  try {
    handler = spec.setup(task, out, fail);
  } catch (error) {
    fail(error);
    return undefined;
  }
  const active = handler;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- handlers are closures (see above)
  const { onRecord } = active;
  const forwardTo = (element: ControlElement) => () => out(element);
  // Every handler forwards a watermark from within its onWatermark (timers fire first, then it moves on), so one
  // closure sending the watermark being handled serves them all: a closure per watermark and operator was over a
  // third of what a windowed job allocated. Barriers keep one each, since a snapshot may forward later.
  let watermark: Watermark | undefined;
  const forwardWatermark = () => out(watermark!);
  return {
    handler: active,
    next(element) {
      try {
        if (!(element instanceof ControlElement)) onRecord(element);
        else if (element instanceof CheckpointBarrier && active.onBarrier) active.onBarrier(element, forwardTo(element));
        else if (element instanceof Watermark) {
          task.watermark.current = element.timestamp;
          if (active.onWatermark) {
            watermark = element;
            active.onWatermark(element, forwardWatermark);
          }
          else out(element);
        } else if (element instanceof SideOutputElement) active.onSideOutput?.(element);
        else out(element);
      } catch (error) {
        fail(error);
      }
    },
    complete() {
      try {
        active.onComplete?.();
      } catch (error) {
        fail(error);
        return;
      }
      if (!end.closed) downstream.complete();
    },
  };
}
