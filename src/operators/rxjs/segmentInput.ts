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
  private single: Subscriber<unknown> | undefined;
  private ended = false;

  readonly observable = new Observable<unknown>((subscriber) => {
    if (this.ended) return subscriber.complete();
    this.subscribers.push(subscriber);
    this.single = this.subscribers.length === 1 ? subscriber : undefined;
    return () => {
      const index = this.subscribers.indexOf(subscriber);
      if (index >= 0) this.subscribers.splice(index, 1);
      this.single = this.subscribers.length === 1 ? this.subscribers[0] : undefined;
    };
  });

  /** The subscriber when there is exactly one (the usual case: the segment's first operator). */
  get only(): Subscriber<unknown> | undefined {
    return this.single;
  }

  next(value: unknown): void {
    const only = this.single;
    if (only !== undefined) only.next(value);
    else this.nextEach(value);
  }

  complete(): void {
    this.ended = true;
    this.single = undefined;
    for (const subscriber of this.subscribers.splice(0)) subscriber.complete();
  }

  /** Takes subscribers again after `complete`, as a new input would (the closure-state check reuses one). */
  reopen(): void {
    this.ended = false;
  }

  /** `next` with no subscriber or several. */
  private nextEach(value: unknown): void {
    // A copy: a subscriber may unsubscribe (take) or another subscribe (retry) while the record is handed out.
    for (const subscriber of [...this.subscribers]) subscriber.next(value);
  }
}
