import { UncheckpointedStateError } from '../../core/errors.js';
import type { TaskContext } from '../../core/graph.js';
import type { Observable, Subscriber, Unsubscribable } from 'rxjs';
import { applySteps, type LiftedStep } from './liftedSteps.js';
import { SegmentInput } from './segmentInput.js';
import { structurallyEqual } from './structurallyEqual.js';

/** Records checked first, each of them: closure state shows in the first records a segment sees. */
const CHECK_FIRST = 64;
/** Past those, one record in this many (a power of two: the sampling is a mask)… */
const CHECK_EVERY = 1024;
/**
 * …up to this many records, and one in `CHECK_RARELY` after them. A check costs tens of µs of cold code (a fresh
 * subscription whose RxJS functions V8 compiles again after each full GC); on a job of millions of records one in
 * 1,024 cost the RxJS segment ~10% of its throughput, while state a closure keeps shows in its first records.
 */
const CHECK_OFTEN_UNTIL = 65_536;
const CHECK_RARELY = 16_384;

/**
 * Development mode, as React's: on unless NODE_ENV is 'production'. Spelled `process.env.NODE_ENV`, as React does,
 * because bundlers (Vite, webpack, esbuild) replace exactly that text in a production build for the browser; where
 * nothing defines it (a browser page without a bundler) reading it throws, and development mode stays on.
 */
export function developmentMode(): boolean {
  try {
    return process.env.NODE_ENV !== 'production';
  } catch {
    return true;
  }
}

/** What the check needs of its segment's end, so that a fresh instance emits where the live one does. */
export interface SegmentEnd {
  /** A subscriber emitting into the segment's end, for a fresh instance's last operator (see SegmentOutput). */
  subscriber(error: (error: unknown) => void): Subscriber<unknown>;
  /** What `run` made the segment's end receive, kept from downstream. */
  hold(run: () => void): unknown[];
}

/**
 * The development-mode check that an RxJS segment keeps no state in its closures, like React's StrictMode double
 * invocation: for sampled records, a fresh instance of the segment (a new subscription: every subscription of an
 * RxJS operator has its own closure state) is subscribed, given that one record and completed, and what it emitted
 * must equal, structurally, what the live instance emitted for that record. A difference means the output depends on
 * earlier records, or the segment emits when subscribed or completed: state that no checkpoint holds, lost at every
 * restore. The user's functions run a second time on sampled records, as StrictMode runs them twice.
 */
export class ClosureStateCheck {
  private seen = 0;
  /**
   * The fresh instances' input and chain, made once: each `subscribe` of the chain runs new instances of the
   * operators, with their own closure state, whichever Observable objects it starts from. A check pays only for the
   * subscription itself (it runs rarely, so its code stays cold and every object it makes costs a cache miss).
   */
  private readonly input = new SegmentInput();
  private readonly chain: Observable<unknown>;
  /** The record being checked and the fresh instance's subscription, for `runFresh`. */
  private value: unknown;
  private subscription: Unsubscribable | undefined;

  /** Whether a segment of `steps` is checked: not in production mode, nor when an operator opted out. */
  static applies(steps: readonly LiftedStep[]): boolean {
    return developmentMode() && steps.every((step) => step.checked);
  }

  /** The check of a segment (one that `applies`) for one attempt. */
  constructor(
    steps: readonly LiftedStep[],
    private readonly task: TaskContext,
    private readonly end: SegmentEnd,
  ) {
    this.chain = applySteps(this.input.observable, steps);
  }

  /** Whether the next record is checked: a counter, so that unchecked records pay one increment. */
  samples(): boolean {
    const seen = ++this.seen;
    return seen <= CHECK_FIRST || (seen & ((seen <= CHECK_OFTEN_UNTIL ? CHECK_EVERY : CHECK_RARELY) - 1)) === 0;
  }

  /** Throws `UncheckpointedStateError` unless a fresh instance given only `value` emits `live`. */
  verify(value: unknown, live: readonly unknown[]): void {
    this.value = value;
    // The fresh instance ends where the live one does, so that the operators' call sites stay monomorphic.
    const fresh = this.end.hold(this.runFresh);
    // What it would emit later (a timer's, a promise's) is not compared: the live instance's fails on its own.
    this.subscription!.unsubscribe();
    this.subscription = this.value = undefined;
    this.input.reopen();
    if (!structurallyEqual(live, fresh)) throw new UncheckpointedStateError(this.message(value, live, fresh));
  }

  /** Subscribes a fresh instance, gives it the record being checked and completes it. */
  private readonly runFresh = () => {
    // An error of the fresh instance is the live instance's too, which fails the attempt itself.
    this.subscription = this.chain.subscribe(this.end.subscriber(ignore));
    this.input.next(this.value);
    this.input.complete();
  };

  private message(value: unknown, live: readonly unknown[], fresh: readonly unknown[]): string {
    const { uid, job } = this.task;
    return (
      `operator '${uid}' (rxjs) of job '${job}' keeps state in its closure that no checkpoint holds: for the record ${preview(value)} ` +
      `it emitted ${preview(live)}, a fresh instance given only that record ${preview(fresh)}. Its output depends on earlier ` +
      `records, or it emits when subscribed or completed (scan, bufferCount, distinct, pairwise, take, startWith, rxjs reduce), ` +
      `and that state restarts empty after every restore. Keep it in weir: fold or reduce for scan, window(countWindow(n)) ` +
      `for bufferCount, keyed state in process for distinct, pairwise and take; or accept losing it with uncheckpointed(…). ` +
      `This development-mode check runs the operator's functions a second time on sampled records; NODE_ENV=production turns it off`
    );
  }
}

/** The fresh instances' error handler: an error of theirs is the live instance's too. */
const ignore = () => undefined;

/** A short JSON rendering of `value` for an error message. */
function preview(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
