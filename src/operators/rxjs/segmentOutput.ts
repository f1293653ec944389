import { Subscriber, type Observer } from 'rxjs';
import { ownCopy } from '../../core/ownCopy.js';

/** The Subscriber a segment's chain ends in, made on the segment's `emit` and the handler of its errors. */
export type SegmentOutput = Subscriber<unknown>;
export type SegmentOutputClass = new (emit: (value: unknown) => void, error: (error: unknown) => void) => SegmentOutput;

/**
 * The end of an RxJS segment's chain, the Subscriber its last operator emits into: `next` is the segment's own
 * function, called straight from the operator. A Subscriber made on an observer would take three calls per record
 * (Subscriber.next, _next, destination.next), and it would make Subscriber.prototype.next's call of `_next`
 * megamorphic (the operators' subscribers each have a closure of their own there, a plain Subscriber its
 * prototype's), so that V8 could inline none of them. The fresh instances of the closure-state check end in one too,
 * with the same `emit`, so that the operators' call sites see one class and one function.
 *
 * A class per segment, compiled per segment (see `ownCopy` and segmentPath.ts): a `next` shared by every segment
 * of the process, once optimized on its own with one job's chain inlined, is too big for V8 to inline in the next.
 */
export function segmentOutputClass(): SegmentOutputClass {
  return ownCopy(defineSegmentOutput)(Subscriber, ignore);
}

/** SegmentOutput's class, compiled per segment: self-contained. */
const defineSegmentOutput = (Base: typeof Subscriber, complete: () => undefined): SegmentOutputClass =>
  class extends Base<unknown> {
    constructor(
      private readonly emit: (value: unknown) => void,
      error: (error: unknown) => void,
    ) {
      super({ next: emit, error, complete } satisfies Observer<unknown>);
    }

    override next(value: unknown): void {
      // As Subscriber's own: nothing after the end (take) or an error.
      if (!this.isStopped) this.emit(value);
    }
  };

/** The segment's end on completion: nothing, since a segment that completes stops records, never the flow after it. */
const ignore = () => undefined;
