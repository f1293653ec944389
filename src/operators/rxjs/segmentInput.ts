import { Observable, type Subscriber } from 'rxjs';

/**
 * The records entering an RxJS segment: what a Subject does for it, without a Subject's per-record cost. RxJS's Node
 * build (ES5) walks a Subject's observers with an iterator object and wraps every `next` in a closure, which on the
 * `rxjs-interop` bench was a large share of the segment's time and of its garbage. Like a Subject it is hot and
 * multicast (an operator that resubscribes, as `retry` does, gets the records from then on), and a subscriber that
 * comes after the end is completed at once.
 */
export class SegmentInput {
  private readonly subscribers: Subscriber<unknown>[] = [];
  /** The subscriber when there is exactly one (the usual case: the segment's first operator). */
  private only: Subscriber<unknown> | undefined;
  private ended = false;

  readonly observable = new Observable<unknown>((subscriber) => {
    if (this.ended) return subscriber.complete();
    this.subscribers.push(subscriber);
    this.only = this.subscribers.length === 1 ? subscriber : undefined;
    return () => {
      const index = this.subscribers.indexOf(subscriber);
      if (index >= 0) this.subscribers.splice(index, 1);
      this.only = this.subscribers.length === 1 ? this.subscribers[0] : undefined;
    };
  });

  next(value: unknown): void {
    const only = this.only;
    if (only !== undefined) only.next(value);
    else this.nextEach(value);
  }

  complete(): void {
    this.ended = true;
    this.only = undefined;
    for (const subscriber of this.subscribers.splice(0)) subscriber.complete();
  }

  /** Takes subscribers again after `complete`, as a new input would (the closure-state check reuses one). */
  reopen(): void {
    this.ended = false;
  }

  /**
   * `next` as the segment's record path calls it, made once its operators subscribed: while their one subscriber
   * stays, the record goes to it through a `const` binding; after a change (`take` ended, `retry` subscribed again)
   * through `next`.
   *
   * Why: every RxJS operator enters its own code through one call in RxJS's shared Subscriber code (its
   * `OperatorSubscriber`'s `_next` calls the operator's function), and that call site sees every operator of the
   * process, so V8 inlines none of them from feedback. From a binding that never changes V8 compiles the subscriber
   * as a constant, and from it, field by field (each set once, in the constructor) and binding by binding, the
   * operator's function and the next subscriber as constants too: it then inlines the whole rxjs chain into weir's
   * record path, as it does weir's own operators (see `ownCopy`). Read from `only`, which changes, it knew none of
   * them: rxjs `map` + `filter` cost 40 ns a record more than weir's; now within a few ns, and the record `map` makes
   * is no longer allocated when nothing keeps it.
   */
  entry(): (value: unknown) => void {
    const first = this.only;
    if (first === undefined) return (value) => this.next(value);
    return (value) => {
      if (this.only === first) first.next(value);
      else this.next(value);
    };
  }

  /** `next` with no subscriber or several. */
  private nextEach(value: unknown): void {
    // A copy: a subscriber may unsubscribe (take) or another subscribe (retry) while the record is handed out.
    for (const subscriber of [...this.subscribers]) subscriber.next(value);
  }
}
