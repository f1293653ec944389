import { CheckpointCorruptedError, CheckpointNotFoundError, JobDefinitionError, type WeirError } from '../core/errors.js';
import type { Key } from '../core/types.js';
import { compareKeys, encodeCursor } from '../query/keyOrder.js';
import { InvalidQueryError, QueryableStateUnavailableError, UnknownQueryableStateError } from '../query/queryErrors.js';
import { DEFAULT_PAGE_SIZE, type KeyPage } from '../query/stateQueries.js';
import { fromWireError, type WireError } from './workerProtocol.js';

/**
 * One page of keys from the pages of the workers, each over its own key groups (so no key is in two): each page
 * holds the smallest `limit` matching keys of its worker, so the smallest `limit` of all of them are the job's.
 * There are more keys when one worker had more or the pages together hold more than `limit`.
 * @example
 * mergeKeyPages([{ keys: ['a', 'c'] }, { keys: ['b'] }], 2); // { keys: ['a', 'b'], cursor: … after 'b' }
 */
export function mergeKeyPages(pages: readonly KeyPage[], limit: number = DEFAULT_PAGE_SIZE): KeyPage {
  const keys: Key[] = pages.flatMap((page) => page.keys).sort(compareKeys);
  const more = keys.length > limit || pages.some((page) => page.cursor !== undefined);
  if (!more) return { keys };
  const page = keys.slice(0, limit);
  return { keys: page, cursor: encodeCursor(page[page.length - 1]!) };
}

/** The query errors a worker's answer can carry, by name, so that they reach the caller as their own classes. */
const QUERY_ERRORS: Record<string, new (message: string) => WeirError> = {
  InvalidQueryError,
  UnknownQueryableStateError,
  QueryableStateUnavailableError,
  CheckpointNotFoundError,
  CheckpointCorruptedError,
  JobDefinitionError,
};

/** The error a query failed with in a worker, as its own class when it is a query error (else an `Error` of that name). */
export function queryErrorOf(wire: WireError): Error {
  const known = QUERY_ERRORS[wire.name];
  return known ? new known(wire.message) : fromWireError(wire);
}
