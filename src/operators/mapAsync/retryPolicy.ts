import type { AsyncRetryOptions } from './mapAsyncOptions.js';

/**
 * When a failed call is tried again (Flink's AsyncRetryStrategy): the wait before attempt `attempt + 1` after attempt
 * `attempt` (1-based) failed with `error`, or undefined to give up (attempts used up, or `retryOn` refuses the error).
 * A throw of `retryOn` reaches the caller, which fails the attempt with it.
 */
export function retryDelay(retry: AsyncRetryOptions | undefined, attempt: number, error: unknown): number | undefined {
  if (retry === undefined || attempt >= retry.attempts) return undefined;
  if (retry.retryOn !== undefined && !retry.retryOn(error)) return undefined;
  if (retry.delay !== undefined) return retry.delay;
  const { initial, max = Number.POSITIVE_INFINITY, multiplier = 2 } = retry.backoff!;
  return Math.min(max, initial * multiplier ** (attempt - 1));
}
