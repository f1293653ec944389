import { checkOptions } from '../../core/checkOptions.js';
import { JobDefinitionError } from '../../core/errors.js';

/**
 * How often and when a failed `mapAsync` call is tried again (Flink's AsyncRetryStrategy).
 * @example { attempts: 4, backoff: { initial: 100, max: 2_000 }, retryOn: (error) => !(error instanceof TypeError) }
 */
export interface AsyncRetryOptions {
  /** The most calls of the function per record, the first included (2 or more to retry at all). */
  attempts: number;
  /** A fixed wait between attempts, in ms (Flink's fixed-delay strategy); give this or `backoff`. */
  delay?: number;
  /** Waits growing from `initial` by `multiplier` (default 2) up to `max` (default unbounded), in ms. */
  backoff?: { initial: number; max?: number; multiplier?: number };
  /** Which errors are worth another attempt (all by default); an error it refuses fails the record at once. */
  retryOn?: (error: unknown) => boolean;
}

/**
 * The options of `mapAsync`: its uid, how many calls may be in flight, result order, timeout and retries.
 * @example mapAsync(lookUp, { uid: 'enrich', capacity: 50, ordered: false, timeout: 1_000, onTimeout: (o) => ({ ...o, country: 'unknown' }) })
 */
export interface MapAsyncOptions<T, R> {
  /** Names the operator in checkpoints, which hold the records still in flight: required, as for stateful operators. */
  uid: string;
  /** The most records started and not yet emitted, per instance (Flink's capacity, default 100). */
  capacity?: number;
  /** Results leave in input order (default, Flink's orderedWait) or as they complete (unorderedWait). */
  ordered?: boolean;
  /** The longest a record may take, all attempts together, in ms of the job's clock (default: no limit). */
  timeout?: number;
  /** The result of a record that timed out; without it a timeout fails the attempt with an `AsyncTimeoutError`. */
  onTimeout?: (value: T) => R | Promise<R>;
  /** Tries a failed call again, with a fixed delay or a backoff. */
  retry?: AsyncRetryOptions;
  /** Parallel instances on a keyed flow (the job's default parallelism by default); an unkeyed mapAsync runs one. */
  parallelism?: number;
}

/** The checked options, with their defaults. */
export interface AsyncSettings<T, R> {
  uid: string;
  capacity: number;
  ordered: boolean;
  timeout: number | undefined;
  onTimeout: ((value: T) => R | Promise<R>) | undefined;
  retry: AsyncRetryOptions | undefined;
}

const OPTIONS = ['uid', 'capacity', 'ordered', 'timeout', 'onTimeout', 'retry', 'parallelism'];
const RETRY_OPTIONS = ['attempts', 'delay', 'backoff', 'retryOn'];
const BACKOFF_OPTIONS = ['initial', 'max', 'multiplier'];

/** Rejects what `mapAsync` cannot run with, naming the option and what it takes. */
export function checkMapAsyncOptions<T, R>(fn: unknown, options: MapAsyncOptions<T, R>): AsyncSettings<T, R> {
  if (typeof fn !== 'function') throw new JobDefinitionError(`mapAsync: the first argument must be a function (value, signal) => Promise<result>, got ${typeof fn}`);
  if (options === undefined || options === null) throw new JobDefinitionError("mapAsync: options with a uid are required, e.g. mapAsync(fn, { uid: 'enrich' })");
  checkOptions('mapAsync', options, OPTIONS);
  const where = `mapAsync '${String(options.uid)}'`;
  if (typeof options.uid !== 'string' || options.uid === '') {
    throw new JobDefinitionError('mapAsync: uid must be a non-empty string: it names the records in flight in checkpoints');
  }
  const capacity = options.capacity ?? 100;
  if (!(Number.isInteger(capacity) && capacity >= 1)) throw new JobDefinitionError(`${where}: capacity must be an integer ≥ 1, got ${String(capacity)}`);
  if (options.ordered !== undefined && typeof options.ordered !== 'boolean') {
    throw new JobDefinitionError(`${where}: ordered must be true (results in input order) or false (as they complete), got ${String(options.ordered)}`);
  }
  if (options.timeout !== undefined && !(typeof options.timeout === 'number' && options.timeout > 0)) {
    throw new JobDefinitionError(`${where}: timeout must be a number of ms > 0, got ${String(options.timeout)}`);
  }
  if (options.onTimeout !== undefined) {
    if (typeof options.onTimeout !== 'function') throw new JobDefinitionError(`${where}: onTimeout must be a function (value) => result`);
    if (options.timeout === undefined) throw new JobDefinitionError(`${where}: onTimeout is given but no timeout; set timeout (ms) as well`);
  }
  return {
    uid: options.uid,
    capacity,
    ordered: options.ordered ?? true,
    timeout: options.timeout,
    onTimeout: options.onTimeout,
    retry: checkRetry(where, options.retry),
  };
}

function checkRetry(where: string, retry: AsyncRetryOptions | undefined): AsyncRetryOptions | undefined {
  if (retry === undefined) return undefined;
  checkOptions(`${where}: retry`, retry, RETRY_OPTIONS);
  if (!(Number.isInteger(retry.attempts) && retry.attempts >= 1)) {
    throw new JobDefinitionError(`${where}: retry.attempts must be an integer ≥ 1 (calls per record, the first included), got ${String(retry.attempts)}`);
  }
  if ((retry.delay === undefined) === (retry.backoff === undefined)) {
    throw new JobDefinitionError(`${where}: retry takes either delay (a fixed wait, ms) or backoff ({ initial, max, multiplier }), not ${retry.delay === undefined ? 'neither' : 'both'}`);
  }
  if (retry.delay !== undefined && !(typeof retry.delay === 'number' && retry.delay >= 0)) {
    throw new JobDefinitionError(`${where}: retry.delay must be a number of ms ≥ 0, got ${String(retry.delay)}`);
  }
  if (retry.backoff !== undefined) {
    checkOptions(`${where}: retry.backoff`, retry.backoff, BACKOFF_OPTIONS);
    const { initial, max, multiplier } = retry.backoff;
    if (!(typeof initial === 'number' && initial >= 0)) throw new JobDefinitionError(`${where}: retry.backoff.initial must be a number of ms ≥ 0, got ${String(initial)}`);
    if (max !== undefined && !(typeof max === 'number' && max >= initial)) {
      throw new JobDefinitionError(`${where}: retry.backoff.max must be a number of ms ≥ initial (${initial}), got ${String(max)}`);
    }
    if (multiplier !== undefined && !(typeof multiplier === 'number' && multiplier >= 1)) {
      throw new JobDefinitionError(`${where}: retry.backoff.multiplier must be a number ≥ 1, got ${String(multiplier)}`);
    }
  }
  if (retry.retryOn !== undefined && typeof retry.retryOn !== 'function') throw new JobDefinitionError(`${where}: retry.retryOn must be a function (error) => boolean`);
  return retry;
}
