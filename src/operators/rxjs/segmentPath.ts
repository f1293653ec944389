import type { Subscriber } from 'rxjs';
import type { ClosureStateCheck } from './closureStateCheck.js';
import type { SegmentInput } from './segmentInput.js';

// The way records take through an RxJS segment: in through its operators' first subscriber, out through `output`
// (SegmentOutput's function), which emits downstream only while the segment handles an input.
//
// Why it is built this way: every RxJS operator enters its own code through one call in RxJS's shared Subscriber
// code (its OperatorSubscriber's `_next` calls the operator's function), a call site that sees every operator of the
// process, so V8 inlines none of them from what that site learned. Records enter the first subscriber through a
// binding that never changes (`first` below), and from a constant V8 follows the chain as constants, field by field
// (each set once, in a constructor) and binding by binding: the operator's function, the next subscriber, its
// function, and at the end `output` and weir's operators after it. It then compiles the whole rxjs chain into weir's
// record path as one function, as it does weir's own operators. Read from a field that changes, as it was, V8 knew
// none of them: rxjs `map` + `filter` cost ~40 ns a record more than weir's, and the record `map` made was allocated
// even when nothing kept it.
//
// The factories are compiled per segment (see `ownCopy`), so self-contained: V8 weighs a function to inline by its
// bytecode and by the bytecode its optimized code already inlined, and a shared function optimized in an earlier
// job, with that job's chain inlined, was too big to inline in the next one.

/** The record path of a segment without the closure-state check (production mode, or `uncheckpointed`). */
export interface SegmentPath {
  /** What the segment's last operator emits. */
  readonly output: (value: unknown) => void;
  /** Runs `run` (the subscription, the end of input) as the handling of an input, at the last record's timestamp. */
  readonly handle: (run: () => void) => void;
  /** The segment's `onRecord`, once its operators subscribed to `input`: `first` gets the records while it stays the only subscriber. */
  readonly records: (input: SegmentInput, first: Subscriber<unknown> | undefined) => (value: unknown) => void;
}

/** The record path with the closure-state check (development mode). */
export interface CheckedSegmentPath extends Omit<SegmentPath, 'records'> {
  /** What `run` made the segment emit, kept from downstream (the check's fresh instances end in `output` too). */
  readonly hold: (run: () => void) => unknown[];
  /** As SegmentPath's, checking the records `check` samples. */
  readonly records: (input: SegmentInput, first: Subscriber<unknown> | undefined, check: ClosureStateCheck) => (value: unknown) => void;
}

/** The segment's record path without the check, compiled per segment (see above): self-contained. */
export const productionPath = (record: { current: number | undefined }, emit: (value: unknown) => void, asynchronous: () => void): SegmentPath => {
  // Whether the segment is handling an input (a record, the end of input, its subscription): it emits only then.
  let handling = false;
  // The timestamp of the record being handled, which what it emits carries; at the end of input, the last record's.
  let timestamp: number | undefined;
  return {
    output: (value) => {
      if (!handling) return asynchronous();
      // Downstream operators may have moved the shared slot since the last emission.
      record.current = timestamp;
      emit(value);
    },
    handle: (run) => {
      record.current = timestamp;
      handling = true;
      run();
      handling = false;
    },
    records: (input, first) => (value) => {
      timestamp = record.current;
      handling = true;
      if (input.only === first) first!.next(value);
      else input.next(value);
      handling = false;
    },
  };
};

/** The segment's record path with the check, compiled per segment (see above): self-contained. */
export const checkedPath = (record: { current: number | undefined }, emit: (value: unknown) => void, asynchronous: () => void): CheckedSegmentPath => {
  let handling = false;
  let timestamp: number | undefined;
  // What the segment emits while the closure-state check holds it back.
  let held: unknown[] | undefined;
  // RxJS routes the operators' throws to `error`; anything else that throws fails the attempt, so the flags here need
  // no restoring on the way out.
  const hold = (run: () => void) => {
    const emitted: unknown[] = (held = []);
    run();
    held = undefined;
    return emitted;
  };
  return {
    output: (value) => {
      if (held !== undefined) return void held.push(value);
      if (!handling) return asynchronous();
      record.current = timestamp;
      emit(value);
    },
    hold,
    handle: (run) => {
      record.current = timestamp;
      handling = true;
      run();
      handling = false;
    },
    records: (input, first, check) => {
      // A record the check samples: its output is held until a fresh instance agreed with it.
      const checked = (value: unknown) => {
        const live = hold(() => {
          handling = true;
          if (input.only === first) first!.next(value);
          else input.next(value);
          handling = false;
        });
        check.verify(value, live);
        for (const emitted of live) {
          record.current = timestamp;
          emit(emitted);
        }
      };
      // The unchecked records' way is written out here rather than shared with `checked`: a function of its own
      // would be optimized on its own first, and V8 then declines to inline it (with all it inlined) here.
      return (value) => {
        timestamp = record.current;
        if (check.samples()) return checked(value);
        handling = true;
        if (input.only === first) first!.next(value);
        else input.next(value);
        handling = false;
      };
    },
  };
};
