import { Observable } from 'rxjs';

/**
 * Where a `DirectObservable` sends its elements. A producer read directly may still send after it was stopped, or
 * after `error`/`complete` upstream of a consumer that already ended: the observer drops what comes after its end.
 */
export interface DirectObserver<T> {
  next(value: T): void;
  error(error: unknown): void;
  complete(): void;
  /**
   * Set by weir's own consumers (chains, fan-outs, multi-input operators), which drop what reaches them after their
   * end themselves: `endOnce` then hands their `next` records as they are, without a guard of its own in between.
   */
  readonly dropsAfterEnd?: boolean;
  /**
   * `next` for an element its producer knows to be a record, never a control element (a source's records, what an
   * operator emits): the consumer skips the `instanceof ControlElement` check that `next` makes on every element,
   * a check per record and hop that was a good part of what a chain of cheap operators cost. Never uses `this`.
   */
  readonly nextRecord?: (value: T) => void;
}

/**
 * An observable that weir's own operators also read without an RxJS Subscriber in between (`subscribeDirect`), as
 * a source's records are handed to the first operator of a task, a fan-out's to each consumer, and a multi-input
 * operator's to the operators after it: the Subscriber's checks and wrapping cost about as much per record as a
 * filter. Any other subscriber (an RxJS operator, `asObservable`) gets the usual RxJS guarantees.
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

/** Reads `input` into `observer`: directly when weir produces it, through a subscription otherwise. */
export function subscribeTo<T>(input: Observable<T>, observer: DirectObserver<T>): () => void {
  if (input instanceof DirectObservable) return (input as DirectObservable<T>).subscribeDirect(observer);
  const subscription = input.subscribe(observer);
  return () => subscription.unsubscribe();
}

/** An observer that knows whether it ended. */
export interface ClosableObserver<T> extends DirectObserver<T> {
  closed: boolean;
  /** `next` for a record (see `DirectObserver.nextRecord`): the observer's own when it has one and guards itself. */
  readonly nextRecord: (value: T) => void;
}

/**
 * `observer`, ended at most once and sent nothing after its end: what an RxJS Subscriber guarantees, for a consumer
 * read directly. Its reader's teardown sets `closed` too. A consumer that drops records after its own end gets them
 * directly.
 */
export function endOnce<T>(observer: DirectObserver<T>): ClosableObserver<T> {
  const guards = observer.dropsAfterEnd === true;
  const next = guards
    ? // One call less per record on the way into a consumer that guards itself (see `dropsAfterEnd`); its `next`
      // never uses `this`.
      // eslint-disable-next-line @typescript-eslint/unbound-method
      observer.next
    : (value: T) => {
        if (!guarded.closed) observer.next(value);
      };
  const guarded: ClosableObserver<T> = {
    closed: false,
    next,
    nextRecord: (guards ? observer.nextRecord : undefined) ?? next,
    error(error) {
      if (guarded.closed) return;
      guarded.closed = true;
      observer.error(error);
    },
    complete() {
      if (guarded.closed) return;
      guarded.closed = true;
      observer.complete();
    },
  };
  return guarded;
}
