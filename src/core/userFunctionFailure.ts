import { UserFunctionError, WeirError } from './errors.js';

/** Where a user function runs: the job, the operator's uid, and its kind (or a source's name). */
export interface UserFunctionSite {
  job: string;
  uid: string;
  operator: string;
}

/**
 * What fails the attempt when a user function of operator `where` threw `error`: a `UserFunctionError` around it, or
 * `error` itself when it is one of weir's typed errors. Internal: not exported from the package root.
 */
export function userFunctionFailure(error: unknown, where: UserFunctionSite): unknown {
  return error instanceof WeirError ? error : new UserFunctionError(where, error);
}

/**
 * The one error path of an operator's user functions, as RxJS routes every callback's throw through its
 * OperatorSubscriber: whatever runs the operator (a chain, a multi-input operator, a timer, a source) calls its
 * functions through `call`/`attempt`, and a throw fails the attempt once, as a `UserFunctionError` naming the
 * operator. One guard per operator and attempt; calling through it allocates nothing per record.
 */
export class UserFunctionGuard {
  /** The guard of operator `where`, failing the attempt through `failAttempt`. */
  static of(where: UserFunctionSite, failAttempt: (error: unknown) => void): UserFunctionGuard {
    return new UserFunctionGuard((error) => failAttempt(userFunctionFailure(error, where)));
  }

  /**
   * @param fail fails the attempt with a throw of this operator's functions, naming the operator: a guard's own
   *   `fail`, as operators are handed it, for the callbacks an operator runs outside record processing (timers)
   */
  constructor(readonly fail: (error: unknown) => void) {}

  /** `fn(value)`; a throw fails the attempt instead of reaching the caller. */
  call<A>(fn: (value: A) => void, value: A): void {
    try {
      fn(value);
    } catch (error) {
      this.fail(error);
    }
  }

  /** `fn(first, second)`, guarded as `call`. */
  call2<A, B>(fn: (first: A, second: B) => void, first: A, second: B): void {
    try {
      fn(first, second);
    } catch (error) {
      this.fail(error);
    }
  }

  /** What `fn` returns, or `undefined` when it threw (the attempt has failed). */
  attempt<R>(fn: () => R): R | undefined {
    try {
      return fn();
    } catch (error) {
      this.fail(error);
      return undefined;
    }
  }
}
