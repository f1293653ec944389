import type { Observable } from 'rxjs';
import { ownCopy } from '../core/ownCopy.js';
import { DirectObservable, subscribeTo, type DirectObserver } from './directObservable.js';

/**
 * A node's output read by several consumers (a fan-out), subscribed once upstream: each element is handed to every
 * consumer in the order they subscribed, by a plain call. It keeps RxJS `share()`'s lifecycle (upstream subscribed
 * with the first consumer, released with the last, reset when it ends) without a Subject and a Subscriber per
 * consumer and element, which cost about a quarter of a job with a fan-out (Nexmark Q8). Consumers that read it
 * directly are chains and multi-input operators, which drop what reaches them after their end.
 */
export function fanOut<T>(input: Observable<T>): DirectObservable<T> {
  // Replaced, never changed in place, so that a consumer leaving while an element is handed out does not shift
  // the loop (the same copy RxJS's Subject takes).
  let observers: readonly DirectObserver<T>[] = [];
  // Each consumer's input for records (its `nextRecord`, else its `next`), listed with `observers`: the loop then
  // makes one call per consumer and record, without looking up which input to call.
  let records: readonly ((value: T) => void)[] = [];
  const setObservers = (next: readonly DirectObserver<T>[]) => {
    observers = next;
    records = next.map((observer) => observer.nextRecord ?? ((value: T) => observer.next(value)));
  };
  let stop: (() => void) | undefined;
  const reset = () => {
    const ended = observers;
    setObservers([]);
    stop = undefined;
    return ended;
  };
  // One upstream observer per subscription, ended with it: it drops what its input sends after that itself, so the
  // input hands it records without a guard in between (`dropsAfterEnd`), and a later subscription never sees them.
  const connect = () => {
    let ended = false;
    const upstream: DirectObserver<T> = {
      next(value) {
        if (ended) return;
        const current = observers;
        for (let i = 0; i < current.length; i++) current[i]!.next(value);
      },
      // A record stays one for every consumer: those that take records as such skip their check.
      nextRecord: ownCopy(toEach)(() => ended, () => records),
      error(error) {
        ended = true;
        reset().forEach((observer) => observer.error(error));
      },
      complete() {
        ended = true;
        reset().forEach((observer) => observer.complete());
      },
      dropsAfterEnd: true,
    };
    const release = subscribeTo(input, upstream);
    return () => {
      ended = true;
      release();
    };
  };
  return new DirectObservable<T>((observer) => {
    setObservers([...observers, observer]);
    if (observers.length === 1) stop = connect();
    return () => {
      if (!observers.includes(observer)) return;
      setObservers(observers.filter((other) => other !== observer));
      if (observers.length > 0) return;
      const release = stop;
      stop = undefined;
      release?.();
    };
  });
}

/**
 * A fan-out's input for records, handing each to every consumer. Compiled per fan-out (see `ownCopy`): its calls
 * reach that fan-out's consumers only. Self-contained.
 */
const toEach =
  <T>(ended: () => boolean, consumers: () => readonly ((value: T) => void)[]) =>
  (value: T): void => {
    if (ended()) return;
    const current = consumers();
    for (let i = 0; i < current.length; i++) current[i]!(value);
  };
