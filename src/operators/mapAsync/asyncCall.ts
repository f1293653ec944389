import type { Subscription } from 'rxjs';
import type { Scheduler } from '../../core/types.js';
import type { AsyncSettings } from './mapAsyncOptions.js';
import { retryDelay } from './retryPolicy.js';

/** What one record's calls need: the function, the operator's settings and clock, and where a record fails. */
export interface AsyncCallSite<T, R> {
  readonly fn: (value: T, signal: AbortSignal) => Promise<R> | R;
  readonly settings: AsyncSettings<T, R>;
  readonly scheduler: Scheduler;
  /** Aborted when the attempt ends: the signal of every call that has no timeout of its own. */
  readonly signal: AbortSignal;
  /** Fails the attempt: the record's last error once retries are used up (or its timeout without `onTimeout`). */
  readonly fail: (error: unknown) => void;
  /** The error of a record that timed out, naming it by its position. */
  readonly timedOut: (position: number) => Error;
}

/**
 * One record's calls of `fn` until it gives a result (Flink's AsyncFunction with its ResultFuture): a failure is
 * tried again after the retry policy's wait, the timeout covers every attempt together (as Flink's does) and aborts
 * the running call's signal. Every wait is on the job's clock, so tests run it on virtual time. `done` gets the
 * result once.
 *
 * A class rather than a closure per step: one object per record is what the hot path can afford. A call gets a
 * signal of its own when `fn` takes one (a second parameter, as to hand it to `fetch`) or a timeout may abort it; a
 * function that ignores it gets the attempt's shared signal instead, since an AbortController costs ~10 µs in Node,
 * more than the rest of a record's work (a shared one would collect every call's abort listeners).
 */
export class AsyncCall<T, R> {
  private settled = false;
  /** Which attempt may still settle the record: a late answer of an earlier one (or of one that timed out) is ignored. */
  private current = 0;
  private controller: AbortController | undefined;
  private retryTimer: Subscription | undefined;
  private readonly timeoutTimer: Subscription | undefined;
  private readonly ownSignal: boolean;

  constructor(
    private readonly site: AsyncCallSite<T, R>,
    private readonly value: T,
    private readonly position: number,
    private readonly done: (result: R) => void,
  ) {
    const { timeout } = site.settings;
    this.ownSignal = timeout !== undefined || site.fn.length >= 2;
    this.timeoutTimer = timeout === undefined ? undefined : site.scheduler.schedule(() => this.timeOut(), timeout);
    this.run(1);
  }

  /** The attempt ended: stops the waits and aborts the running call. */
  cancel(): void {
    if (this.settled) return;
    this.settled = true;
    this.timeoutTimer?.unsubscribe();
    this.retryTimer?.unsubscribe();
    this.controller?.abort();
  }

  private run(attempt: number): void {
    if (this.settled) return;
    this.current = attempt;
    if (this.ownSignal) this.controller = new AbortController();
    let result: R | Promise<R>;
    try {
      result = this.site.fn(this.value, this.controller?.signal ?? this.site.signal);
    } catch (error) {
      return this.failed(attempt, error);
    }
    this.settle(result, attempt);
  }

  private settle(result: R | PromiseLike<R>, attempt: number): void {
    if (!isThenable(result)) return this.finish(result);
    result.then(
      (resolved) => attempt === this.current && this.finish(resolved),
      (error: unknown) => attempt === this.current && (attempt < 0 ? this.giveUp(error) : this.failed(attempt, error)),
    );
  }

  private failed(attempt: number, error: unknown): void {
    let delay: number | undefined;
    try {
      delay = retryDelay(this.site.settings.retry, attempt, error);
    } catch (thrown) {
      return this.giveUp(thrown);
    }
    if (delay === undefined) return this.giveUp(error);
    this.retryTimer = this.site.scheduler.schedule(() => this.run(attempt + 1), delay);
  }

  private timeOut(): void {
    if (this.settled) return;
    // Attempt -1 is the fallback: whatever the timed-out call still answers is ignored.
    this.current = -1;
    this.retryTimer?.unsubscribe();
    this.controller?.abort(this.site.timedOut(this.position));
    const fallback = this.site.settings.onTimeout;
    if (fallback === undefined) return this.giveUp(this.site.timedOut(this.position));
    let result: R | Promise<R>;
    try {
      result = fallback(this.value);
    } catch (error) {
      return this.giveUp(error);
    }
    this.settle(result, -1);
  }

  private finish(result: R): void {
    if (this.settled) return;
    this.settled = true;
    this.timeoutTimer?.unsubscribe();
    this.done(result);
  }

  private giveUp(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.timeoutTimer?.unsubscribe();
    this.retryTimer?.unsubscribe();
    this.site.fail(error);
  }
}

function isThenable<R>(value: R | PromiseLike<R>): value is PromiseLike<R> {
  return typeof (value as PromiseLike<R> | null)?.then === 'function';
}
