import { Observable } from 'rxjs';
import { CheckpointBarrier, ControlElement, SideOutputElement, Watermark, type StreamElement } from '../core/elements.js';
import { StreamRecord, type OutputElement } from './streamRecord.js';

/** Sees what the fragment emits: records, watermarks and barriers, as they pass the end of the fragment. */
export type OutputListener<R> = (element: OutputElement<R> | CheckpointBarrier) => void;

/** What comes out of a harness's fragment: main output with timestamps and watermarks, side outputs by tag, and listeners (`drive`). */
export class HarnessOutput<R> {
  private readonly elements: OutputElement<R>[] = [];
  private readonly sides = new Map<string, StreamRecord<unknown>[]>();
  private readonly listeners = new Set<OutputListener<R>>();

  /**
   * The end of the fragment, which notes what passes it: `timestampOf()` is the timestamp riding beside the record
   * being passed on, and `fail(error)` gives what a failure of the fragment is forwarded as.
   */
  capture(upstream: Observable<StreamElement<unknown>>, timestampOf: () => number | undefined, fail: (error: unknown) => unknown): Observable<StreamElement<unknown>> {
    return new Observable((subscriber) =>
      upstream.subscribe({
        next: (element) => {
          let noted: OutputElement<R> | CheckpointBarrier | undefined;
          if (!(element instanceof ControlElement)) noted = new StreamRecord(element as R, timestampOf());
          else if (element instanceof Watermark) noted = element;
          else if (element instanceof CheckpointBarrier) noted = element;
          else if (element instanceof SideOutputElement) {
            const side = this.sides.get(element.tag) ?? [];
            side.push(new StreamRecord(element.value, element.timestamp));
            this.sides.set(element.tag, side);
          }
          if (noted && !(noted instanceof CheckpointBarrier)) this.elements.push(noted);
          if (noted) this.listeners.forEach((listener) => listener(noted));
          subscriber.next(element);
        },
        error: (error) => subscriber.error(fail(error)),
        complete: () => subscriber.complete(),
      }),
    );
  }

  /** Records and watermarks emitted so far, in order. */
  main(): OutputElement<R>[] {
    return [...this.elements];
  }

  /** The records sent to side output `tag` so far. */
  side<T>(tag: string): StreamRecord<T>[] {
    return [...((this.sides.get(tag) ?? []) as StreamRecord<T>[])];
  }

  clear(): void {
    this.elements.length = 0;
    this.sides.clear();
  }

  /** Calls `listener` with everything emitted from now on; returns what stops it. */
  listen(listener: OutputListener<R>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
