import { MAX_WATERMARK } from '../../core/elements.js';
import { AsynchronousOperatorError } from '../../core/errors.js';
import type { TaskContext } from '../../core/graph.js';
import type { Unsubscribable } from 'rxjs';
import type { HandlerOperatorSpec, OperatorHandler, OperatorSpec } from '../operatorSpec.js';
import { ClosureStateCheck } from './closureStateCheck.js';
import { applySteps, type LiftedStep } from './liftedSteps.js';
import { SegmentInput } from './segmentInput.js';
import { SegmentOutput } from './segmentOutput.js';

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
    const { record } = task;
    const steps = this.steps;
    const input = new SegmentInput();
    // Whether the segment is handling an input (a record, the end of input, its subscription): it emits only then.
    let handling = true;
    // The timestamp of the record being handled, which what it emits carries; at the end of input, the last record's.
    let timestamp: number | undefined;
    let subscription: Unsubscribable;
    let onRecord: (value: unknown) => void;
    const asynchronous = () => fail(new AsynchronousOperatorError(asynchronousMessage(task)));
    // The record path is compiled, with the operators' Subscriber chain, into one function of the chain's (records
    // enter through `input.entry()`, which lets V8 follow the chain: see there). V8 inlines up to a budget of bytecode
    // per function, and what it cannot inline is a call per record and operator. So the functions here stay small,
    // and production mode runs ones without the check's branches.
    if (!ClosureStateCheck.applies(steps)) {
      const output = (value: unknown) => {
        if (!handling) return asynchronous();
        // Downstream operators may have moved the shared slot since the last emission.
        record.current = timestamp;
        emit(value);
      };
      subscription = applySteps(input.observable, steps).subscribe(new SegmentOutput(output, fail));
      const enter = input.entry();
      onRecord = (value) => {
        timestamp = record.current;
        handling = true;
        enter(value);
        handling = false;
      };
    } else {
      // What the segment emits while the closure-state check holds it back (see checked).
      let held: unknown[] | undefined;
      const output = (value: unknown) => {
        if (held !== undefined) return void held.push(value);
        if (!handling) return asynchronous();
        record.current = timestamp;
        emit(value);
      };
      // What `run` made the segment emit, kept from downstream. RxJS routes the operators' throws to `error`; anything
      // else that throws fails the attempt, so the flags here and below need no restoring on the way out.
      const hold = (run: () => void) => {
        const emitted: unknown[] = (held = []);
        run();
        held = undefined;
        return emitted;
      };
      const check = new ClosureStateCheck(steps, task, { subscriber: (error) => new SegmentOutput(output, error), hold });
      subscription = applySteps(input.observable, steps).subscribe(new SegmentOutput(output, fail));
      const enter = input.entry();
      // A record the check samples: its output is held until a fresh instance agreed with it.
      const checked = (value: unknown) => {
        const live = hold(() => {
          handling = true;
          enter(value);
          handling = false;
        });
        check.verify(value, live);
        for (const emitted of live) {
          record.current = timestamp;
          emit(emitted);
        }
      };
      onRecord = (value) => {
        timestamp = record.current;
        if (check.samples()) return checked(value);
        handling = true;
        enter(value);
        handling = false;
      };
    }
    handling = false;
    return {
      onRecord,
      onWatermark(watermark, forward) {
        if (watermark.timestamp === MAX_WATERMARK.timestamp) {
          record.current = timestamp;
          handling = true;
          input.complete();
          handling = false;
        }
        forward();
      },
      dispose: () => subscription.unsubscribe(),
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
