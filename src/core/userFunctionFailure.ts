import { UserFunctionError, WeirError } from './errors.js';

/**
 * What fails the attempt when a user function of operator `where` threw `error`: a `UserFunctionError` around it, or
 * `error` itself when it is one of weir's typed errors. Operators, sinks and sources route their callbacks' throws
 * through here, once each (see `operate`). Internal: not exported from the package root.
 */
export function userFunctionFailure(error: unknown, where: { job: string; uid: string; operator: string }): unknown {
  return error instanceof WeirError ? error : new UserFunctionError(where, error);
}
