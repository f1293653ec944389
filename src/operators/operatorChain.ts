import type { Observable } from 'rxjs';
import { DirectObservable, endOnce, subscribeTo, type ClosableObserver, type DirectObserver } from '../task/directObservable.js';
import { CheckpointBarrier, ControlElement, SideOutputElement, Watermark, withControl, type StreamElement } from '../core/elements.js';
import type { TaskContext } from '../core/graph.js';
import { OperatorCounters } from '../core/operatorCounters.js';
import { UserFunctionGuard } from '../core/userFunctionFailure.js';
import { ownCopy } from '../core/ownCopy.js';
import type { FusedRecordFunction, OperatorHandler, OperatorSpec } from './operatorSpec.js';

/** One operator of a chain: its spec and the task it runs as. */
export interface ChainedOperator {
  readonly task: TaskContext;
  readonly spec: OperatorSpec<unknown, unknown>;
}

/**
 * Where a chained operator sends what it emits: the next operator's input, or the chain's observer. `record` takes
 * what is known to be a record and skips the check for control elements that `next` makes: an operator's `emit` is
 * `record` (it sends control elements with `emitControl`), so within a chain a record is checked once, on entry.
 */
interface Downstream {
  next(element: StreamElement<unknown>): void;
  record(value: unknown): void;
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

  /**
   * `operator` reading `input`: appended to its chain when `input` is one (its node's only consumer is `operator`),
   * or absorbed by the chain's last operator when that one takes it (see OperatorSpec.absorb).
   */
  static after(input: Observable<StreamElement<unknown>>, operator: ChainedOperator): OperatorChain {
    if (!(input instanceof OperatorChain)) return new OperatorChain(input, [operator]);
    const last = input.operators[input.operators.length - 1]!;
    const absorbed = last.spec.absorb?.(operator.spec);
    if (absorbed === undefined) return new OperatorChain(input.input, [...input.operators, operator]);
    return new OperatorChain(input.input, [...input.operators.slice(0, -1), { task: last.task, spec: absorbed }]);
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
  let downstream: Downstream = countEmitted(end, operators[operators.length - 1]!.task.counters);
  // An operator's records out are the records in of the operator chained after it: one increment per record.
  let after: OperatorCounters | undefined;
  // Set up from the end, as unchained operators were (each subscribed to its input after its own setup).
  for (let i = operators.length - 1; i >= 0; i--) {
    const { counters } = operators[i]!.task;
    if (counters !== undefined) counters.countedBy = after;
    after = counters;
    const link = linkOperator(operators[i]!, downstream, end, counters ?? UNCOUNTED);
    if (link === undefined) return dispose;
    handlers.unshift(link.handler);
    downstream = link;
  }
  const first = downstream;
  // The first operator reads the input itself: it drops what the input sends after the chain ended, as every
  // operator does (a Subscriber would drop it).
  const stop = subscribeTo(source, {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- links never use `this` (see linkOperator)
    next: first.next,
    // eslint-disable-next-line @typescript-eslint/unbound-method -- as above
    nextRecord: first.record,
    dropsAfterEnd: true,
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

/** Where records go when nothing reads the counts (the test harness gives its tasks no counters). */
const UNCOUNTED = new OperatorCounters();

/**
 * The chain's end, counting the records its last operator emits (control elements are not records). Its `record` is
 * the chain's own closure even without counters, so that `emitControl` can say where that emit's control goes.
 */
function countEmitted(end: ChainEnd, counters: OperatorCounters = UNCOUNTED): Downstream {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- endOnce's observer never uses `this`
  const { next, nextRecord } = end;
  return {
    next(element) {
      if (!(element instanceof ControlElement)) counters.emitted++;
      next(element);
    },
    record: withControl(ownCopy(countedRecord)(counters, nextRecord), next),
    complete: () => end.complete(),
  };
}

/** The chain's end for records, compiled per chain (see `ownCopy`): self-contained. */
const countedRecord =
  (counters: OperatorCounters, nextRecord: (value: unknown) => void) =>
  (value: unknown): void => {
    counters.emitted++;
    nextRecord(value);
  };

/**
 * One operator's input, sending to `downstream`. What the operator emits goes straight to the next operator's
 * input, one call per record and operator; each input drops what reaches it once the chain failed or was torn down.
 * Every throw of the operator's functions, on any path, goes through its guard and fails the chain once, naming
 * the operator. Undefined when its setup threw (the chain has failed).
 */
function linkOperator(
  { task, spec }: ChainedOperator,
  downstream: Downstream,
  end: ChainEnd,
  counters: OperatorCounters,
): (Downstream & { handler: OperatorHandler<unknown> }) | undefined {
  // The functions a record goes through are read once here: this code is shared by every operator of every job, so
  // a property read per record would be megamorphic (handlers and links are closures and never use `this`).
  // eslint-disable-next-line @typescript-eslint/unbound-method -- see above: observers here never use `this`
  const { next: sendOn, record: emit } = downstream;
  const guard = UserFunctionGuard.of({ job: task.job, uid: task.uid, operator: spec.kind }, (error) => end.error(error));
  if (spec.fused !== undefined) return fusedLink(task, spec.fused, downstream, end, guard, counters);
  const handler = guard.attempt(() => spec.setup(task, emit, guard.fail));
  if (handler === undefined) return undefined;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- handlers are closures (see above)
  const { onRecord, onComplete } = handler;
  const onControl = controlInput(task, handler, sendOn, guard);
  return {
    handler,
    next(element) {
      if (end.closed) return;
      if (element instanceof ControlElement) return onControl(element);
      counters.recordsIn++;
      guard.call(onRecord, element);
    },
    // `next` without the check (one body each rather than one calling the other: a call less at the chain's entry).
    record: withControl(ownCopy(recordInput)(end, counters, onRecord, guard.fail), controlAfterEnd(end, onControl)),
    complete() {
      if (onComplete !== undefined) guard.attempt(onComplete);
      // A throw in onComplete closed the chain: nothing completes after it.
      if (!end.closed) downstream.complete();
    },
  };
}

/**
 * A link's input for records: the operator's `onRecord`, a throw failing the chain through the operator's guard.
 * Compiled per link (see `ownCopy`): self-contained.
 */
const recordInput =
  (end: ChainEnd, counters: OperatorCounters, onRecord: (value: unknown) => void, fail: (error: unknown) => void) =>
  (value: unknown): void => {
    if (end.closed) return;
    counters.recordsIn++;
    try {
      onRecord(value);
    } catch (error) {
      fail(error);
    }
  };

/** A link's input for control elements sent to it by `emitControl`: dropped after the chain ended, as by `next`. */
function controlAfterEnd(end: ChainEnd, onControl: (element: ControlElement) => void): (element: StreamElement<unknown>) => void {
  return (element) => {
    if (!end.closed) onControl(element as ControlElement);
  };
}

/**
 * How an operator takes the control elements that reach it. Every handler forwards a watermark from within its
 * onWatermark (timers fire first, then it moves on), so one closure sending the watermark being handled serves them
 * all: a closure per watermark and operator was over a third of what a windowed job allocated. Barriers keep one
 * each, since a snapshot may forward later.
 */
function controlInput(
  task: TaskContext,
  // eslint-disable-next-line @typescript-eslint/unbound-method -- handlers are closures (see linkOperator)
  { onWatermark, onBarrier, onSideOutput }: OperatorHandler<unknown>,
  sendOn: (element: StreamElement<unknown>) => void,
  guard: UserFunctionGuard,
): (element: ControlElement) => void {
  let watermark: Watermark | undefined;
  const forwardWatermark = () => sendOn(watermark!);
  return (element) => {
    if (element instanceof Watermark) {
      task.watermark.current = element.timestamp;
      if (onWatermark === undefined) return sendOn(element);
      watermark = element;
      guard.call2(onWatermark, element, forwardWatermark);
    } else if (element instanceof CheckpointBarrier && onBarrier !== undefined) {
      guard.call2(onBarrier, element, () => sendOn(element));
    } else if (element instanceof SideOutputElement) {
      if (onSideOutput !== undefined) guard.call(onSideOutput, element);
    } else sendOn(element);
  };
}

/**
 * The input of a fused operator (see `FusedRecordFunction`): the record goes through the operator's function, called
 * here, and on to `downstream`; control elements pass as through an operator without hooks. A throw of the function
 * fails the chain through the operator's guard, as any of its functions' would. The downstream call stays outside the
 * `try`, so that nothing thrown further down is named after this operator.
 */
function fusedLink(
  task: TaskContext,
  fused: FusedRecordFunction<unknown, unknown>,
  downstream: Downstream,
  end: ChainEnd,
  guard: UserFunctionGuard,
  counters: OperatorCounters,
): Downstream & { handler: OperatorHandler<unknown> } {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- observers here never use `this` (see linkOperator)
  const { next: sendOn, record: sendRecord } = downstream;
  // Its handler, released with the chain's, has nothing to release.
  const handler: OperatorHandler<unknown> = { onRecord: sendRecord };
  const onControl = controlInput(task, handler, sendOn, guard);
  const complete = () => {
    if (!end.closed) downstream.complete();
  };
  if ('filter' in fused) {
    const record = ownCopy(filterInput)(end, counters, fused.filter, sendRecord, guard.fail);
    withControl(record, controlAfterEnd(end, onControl));
    return {
      handler,
      next(element) {
        if (end.closed) return;
        if (element instanceof ControlElement) return onControl(element);
        record(element);
      },
      record,
      complete,
    };
  }
  const record = ownCopy(mapInput)(end, counters, fused.map, sendRecord, guard.fail);
  withControl(record, controlAfterEnd(end, onControl));
  return {
    handler,
    next(element) {
      if (end.closed) return;
      if (element instanceof ControlElement) return onControl(element);
      record(element);
    },
    record,
    complete,
  };
}

/** A fused filter's input for records, compiled per link (see `ownCopy`): self-contained. */
const filterInput =
  (end: ChainEnd, counters: OperatorCounters, predicate: (value: unknown) => boolean, sendRecord: (value: unknown) => void, fail: (error: unknown) => void) =>
  (value: unknown): void => {
    if (end.closed) return;
    counters.recordsIn++;
    let keep: boolean;
    try {
      keep = predicate(value);
    } catch (error) {
      return fail(error);
    }
    if (keep) sendRecord(value);
  };

/** A fused map's input for records, compiled per link (see `ownCopy`): self-contained. */
const mapInput =
  (end: ChainEnd, counters: OperatorCounters, project: (value: unknown) => unknown, sendRecord: (value: unknown) => void, fail: (error: unknown) => void) =>
  (element: unknown): void => {
    if (end.closed) return;
    counters.recordsIn++;
    let value: unknown;
    try {
      value = project(element);
    } catch (error) {
      return fail(error);
    }
    sendRecord(value);
  };
