import type { Subscription } from 'rxjs';
import type { Scheduler } from '../../core/types.js';
import type { AsyncSettings } from './mapAsyncOptions.js';
import { retryDelay } from './retryPolicy.js';

/** What one record's calls need: the function, the operator's settings and clock, and where a record fails. */
export interface AsyncCallSite<T, R> {
  readonly fn: (value: T, signal: AbortSignal) => Promise<R> | R;
  readonly settings: AsyncSettings<T, R>;
  readonly scheduler: Scheduler;
  /** Fails the attempt: the record's last error once retries are used up (or its timeout without `onTimeout`). */
  readonly fail: (error: unknown) => void;
  /** The error of a record that timed out, naming it by its position. */
  readonly timedOut: (position: number) => Error;
}

/**
 * Calls `fn` for one record until it gives a result (Flink's AsyncFunction with a ResultFuture): a failure is tried
 * again after the retry policy's wait, the timeout covers every attempt together (as Flink's does) and aborts the
 * running call's signal. Every wait is on the job's clock, so tests run it on virtual time. `done` gets the result
 * once; returns a cancel that aborts whatever is running (the attempt ended).
 */
export function callAsync<T, R>(site: AsyncCallSite<T, R>, value: T, position: number, done: (result: R) => void): () => void {
  const { fn, settings, scheduler } = site;
  let settled = false;
  // Which attempt may still settle the record: a late answer of an earlier one (or of one that timed out) is ignored.
  let current = 0;
  let controller: AbortController | undefined;
  let retryTimer: Subscription | undefined;
  const finish = (result: R) => {
    if (settled) return;
    settled = true;
    timeoutTimer?.unsubscribe();
    done(result);
  };
  const giveUp = (error: unknown) => {
    if (settled) return;
    settled = true;
    timeoutTimer?.unsubscribe();
    retryTimer?.unsubscribe();
    site.fail(error);
  };
  const settle = (result: R | PromiseLike<R>, attempt: number, failed: (error: unknown) => void) => {
    if (!isThenable(result)) return finish(result);
    result.then(
      (resolved) => attempt === current && finish(resolved),
      (error: unknown) => attempt === current && failed(error),
    );
  };
  const failedAttempt = (attempt: number) => (error: unknown) => {
    let delay: number | undefined;
    try {
      delay = retryDelay(settings.retry, attempt, error);
    } catch (thrown) {
      return giveUp(thrown);
    }
    if (delay === undefined) return giveUp(error);
    retryTimer = scheduler.schedule(() => run(attempt + 1), delay);
  };
  const run = (attempt: number) => {
    if (settled) return;
    current = attempt;
    controller = new AbortController();
    const failed = failedAttempt(attempt);
    let result: R | Promise<R>;
    try {
      result = fn(value, controller.signal);
    } catch (error) {
      return failed(error);
    }
    settle(result, attempt, failed);
  };
  const timeOut = () => {
    if (settled) return;
    current = -1;
    retryTimer?.unsubscribe();
    controller?.abort(site.timedOut(position));
    const fallback = settings.onTimeout;
    if (fallback === undefined) return giveUp(site.timedOut(position));
    let result: R | Promise<R>;
    try {
      result = fallback(value);
    } catch (error) {
      return giveUp(error);
    }
    settle(result, -1, giveUp);
  };
  const timeoutTimer = settings.timeout === undefined ? undefined : scheduler.schedule(timeOut, settings.timeout);
  run(1);
  return () => {
    if (settled) return;
    settled = true;
    timeoutTimer?.unsubscribe();
    retryTimer?.unsubscribe();
    controller?.abort();
  };
}

function isThenable<R>(value: R | PromiseLike<R>): value is PromiseLike<R> {
  return typeof (value as PromiseLike<R> | null)?.then === 'function';
}
