import { CheckpointCorruptedError, CheckpointNotFoundError, JobDefinitionError, type WeirError } from '../core/errors.js';
import { InvalidQueryError, QueryableStateUnavailableError, UnknownQueryableStateError } from '../query/queryErrors.js';
import { fromWireError, type WireError } from './workerProtocol.js';

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
