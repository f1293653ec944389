import { JobDefinitionError, WeirError } from '../core/errors.js';

/**
 * No state of the job is registered under this queryable name (a state not listed in its operator's `states` becomes
 * queryable only once its operator uses it).
 */
export class UnknownQueryableStateError extends WeirError {
  override name = 'UnknownQueryableStateError';
}

/** Two states of one job were given the same `queryable` name: a job definition error, found when both are registered. */
export class QueryableStateConflictError extends JobDefinitionError {
  override name = 'QueryableStateConflictError';
}

/** Live state cannot be read right now: the job has ended (query a retained checkpoint with `asOf` instead). */
export class QueryableStateUnavailableError extends WeirError {
  override name = 'QueryableStateUnavailableError';
}

/** A query was malformed: a missing or invalid key, bad paging parameters, a bad cursor, an oversized body. */
export class InvalidQueryError extends WeirError {
  override name = 'InvalidQueryError';
}

/** The queryable state server rejected the request's bearer token (HTTP 401). */
export class QueryUnauthorizedError extends WeirError {
  override name = 'QueryUnauthorizedError';
}

/** The queryable state server could not be reached (connection refused, DNS, timeout). */
export class QueryServerUnreachableError extends WeirError {
  override name = 'QueryServerUnreachableError';
}

/** The client sent more requests than the server's per-client rate limit allows (HTTP 429). */
export class QueryRateLimitedError extends WeirError {
  override name = 'QueryRateLimitedError';

  constructor(
    message: string,
    /** Milliseconds the server asked to wait before retrying. */
    readonly retryAfterMs: number | undefined,
  ) {
    super(message);
  }
}

/** The queryable state server failed to answer (HTTP 5xx or a response that is not weir's). */
export class QueryServerError extends WeirError {
  override name = 'QueryServerError';
}

/**
 * A scale-out member was asked for a key of a key group it does not own (HTTP 421): `owner` names the member that
 * holds it (undefined while it is being handed over), `url` where that one serves queries, if it does.
 */
export class KeyGroupNotOwnedError extends WeirError {
  override name = 'KeyGroupNotOwnedError';

  constructor(
    message: string,
    readonly keyGroup: number | undefined,
    readonly owner: string | undefined,
    readonly url: string | undefined,
  ) {
    super(message);
  }
}
