import { Observable } from 'rxjs';

/** Where a `DirectObservable` sends its elements. */
export interface DirectObserver<T> {
  next(value: T): void;
  complete(): void;
}

/**
 * An observable that an operator chain may also read without an RxJS Subscriber in between (`subscribeDirect`), as
 * a source's records are handed to the first operator of a task: the Subscriber's checks and wrapping cost about as
 * much per record as a filter. Any other subscriber gets the usual RxJS guarantees.
 */
export class DirectObservable<T> extends Observable<T> {
  constructor(private readonly produce: (observer: DirectObserver<T>) => () => void) {
    super((subscriber) => produce(subscriber));
  }

  /**
   * Starts producing into `observer`; the returned function stops it. Unlike a Subscriber, `observer` is not
   * shielded from elements that are sent after it was stopped: the caller ignores those itself.
   */
  subscribeDirect(observer: DirectObserver<T>): () => void {
    return this.produce(observer);
  }
}
