import { MAX_WATERMARK } from '../../core/elements.js';
import { AsynchronousOperatorError } from '../../core/errors.js';
import type { TaskContext } from '../../core/graph.js';
import type { Unsubscribable } from 'rxjs';
import { ownCopy } from '../../core/ownCopy.js';
import type { HandlerOperatorSpec, OperatorHandler, OperatorSpec } from '../operatorSpec.js';
import { ClosureStateCheck } from './closureStateCheck.js';
import { applySteps, type LiftedStep } from './liftedSteps.js';
import { SegmentInput } from './segmentInput.js';
import { segmentOutputClass } from './segmentOutput.js';
import { checkedPath, productionPath } from './segmentPath.js';

/**
 * Consecutive RxJS operators of a pipeline, run as one rxjs chain: a Subject of the records (SegmentInput), the
 * operators lifted onto it, and a subscriber that emits downstream, so that `catchError` sees the errors of the
 * operators before it, as in RxJS. Each `lift` adds a node of its own; chained, consecutive ones join into one
 * segment (a flow read twice fans out, and each reader then runs its own).
 *
 * Only records enter the chain: barriers, watermarks and side-output records go around it. A barrier follows the
 * segment's output for the records before it at once, since everything the segment emits it emits while it handles
 * a record (or the end of input); an emission at any other time (a timer's, a promise's) could not be placed on
 * either side of a barrier, and fails the job with `AsynchronousOperatorError` before it reaches downstream. Holding
 * barriers until such work comes out was not chosen: an output cannot be told apart from the inputs it came from in
 * general, and a debounce may never go quiet. The end of input (the last watermark) completes the Subject, so that
 * rxjs `reduce`, `toArray` or `last` emit before the final checkpoint; a segment that completed early (`take`) stops
 * records, never the rest of the flow.
 */
export class RxjsSegment implements HandlerOperatorSpec<unknown, unknown> {
  readonly kind = 'rxjs';

  constructor(readonly steps: readonly LiftedStep[]) {}

  absorb(next: OperatorSpec<unknown, unknown>): RxjsSegment | undefined {
    return next instanceof RxjsSegment ? new RxjsSegment([...this.steps, ...next.steps]) : undefined;
  }

  setup(task: TaskContext, emit: (value: unknown) => void, fail: (error: unknown) => void): OperatorHandler<unknown> {
    const steps = this.steps;
    const input = new SegmentInput();
    const chain = applySteps(input.observable, steps);
    let subscription: Unsubscribable | undefined;
    let onRecord: (value: unknown) => void;
    let handle: (run: () => void) => void;
    const asynchronous = () => fail(new AsynchronousOperatorError(asynchronousMessage(task)));
    const SegmentOutput = segmentOutputClass();
    // Production mode runs a path without the check's branches: V8 inlines up to a budget of bytecode per function,
    // and the record path holds the operators' Subscriber chain (see segmentPath.ts).
    if (!ClosureStateCheck.applies(steps)) {
      const path = ownCopy(productionPath)(task.record, emit, asynchronous);
      path.handle(() => (subscription = chain.subscribe(new SegmentOutput(path.output, fail))));
      onRecord = path.records(input, input.only);
      handle = path.handle;
    } else {
      const path = ownCopy(checkedPath)(task.record, emit, asynchronous);
      const check = new ClosureStateCheck(steps, task, { subscriber: (error) => new SegmentOutput(path.output, error), hold: path.hold });
      path.handle(() => (subscription = chain.subscribe(new SegmentOutput(path.output, fail))));
      onRecord = path.records(input, input.only, check);
      handle = path.handle;
    }
    return {
      onRecord,
      onWatermark(watermark, forward) {
        if (watermark.timestamp === MAX_WATERMARK.timestamp) handle(() => input.complete());
        forward();
      },
      dispose: () => subscription?.unsubscribe(),
    };
  }
}

function asynchronousMessage({ uid, job }: TaskContext): string {
  return (
    `operator '${uid}' (rxjs) of job '${job}' emitted a record after the record it came from was handled (delay, debounceTime, ` +
    `throttleTime, bufferTime, a mergeMap of a promise, …): weir cannot place it on either side of a checkpoint barrier. ` +
    `Do it the weir way: mapAsync for promises, window(…) for buffering by time, process with timers for delays`
  );
}
