import { Observable } from 'rxjs';
import { CheckpointBarrier, Watermark } from '../core/elements.js';
import type { OutputListener } from './harnessOutput.js';
import { barrier, StreamRecord, type OutputElement } from './streamRecord.js';

/**
 * A harness's output as an Observable while `sources` feed its inputs (source `i` into input `i`, each element
 * through `push`): emits what `listen` sees come out (records, and watermarks and barriers when asked), and
 * completes when every source completed. A push that throws errors the result. What `Harness.drive` returns.
 */
export function driveInputs<R>(
  sources: readonly Observable<unknown>[],
  push: (element: unknown, input: number) => void,
  listen: (listener: OutputListener<R>) => () => void,
  options: { watermarks?: boolean; barriers?: boolean },
): Observable<OutputElement<R> | CheckpointBarrier> {
  return new Observable((subscriber) => {
    const stopListening = listen((element) => {
      if (element instanceof StreamRecord || (element instanceof Watermark && options.watermarks)) subscriber.next(element);
      // As `barrier(id)` writes it: the id is what a diagram says; the trigger time would only make it unequal.
      else if (element instanceof CheckpointBarrier && options.barriers) subscriber.next(barrier(element.id));
    });
    let open = sources.length;
    const subscriptions = sources.map((source, input) =>
      source.subscribe({
        next: (element) => {
          try {
            push(element, input);
          } catch (error) {
            subscriber.error(error);
          }
        },
        error: (error) => subscriber.error(error),
        complete: () => {
          if (--open === 0) subscriber.complete();
        },
      }),
    );
    return () => {
      stopListening();
      subscriptions.forEach((s) => s.unsubscribe());
    };
  });
}
