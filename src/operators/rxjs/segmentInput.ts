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
  private ended = false;

  readonly observable = new Observable<unknown>((subscriber) => {
    if (this.ended) return subscriber.complete();
    this.subscribers.push(subscriber);
    return () => {
      const index = this.subscribers.indexOf(subscriber);
      if (index >= 0) this.subscribers.splice(index, 1);
    };
  });

  next(value: unknown): void {
    const subscribers = this.subscribers;
    if (subscribers.length === 1) return subscribers[0]!.next(value);
    // A copy: a subscriber may unsubscribe (take) or another subscribe (retry) while the record is handed out.
    for (const subscriber of [...subscribers]) subscriber.next(value);
  }

  complete(): void {
    this.ended = true;
    for (const subscriber of this.subscribers.splice(0)) subscriber.complete();
  }
}
