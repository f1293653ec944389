/**
 * Control elements travel through flows between records and are never seen by user functions. Records travel
 * unwrapped (an envelope per record costs 20-30% of throughput), so an element is a control element exactly when
 * it is an instance of `ControlElement`, which no user value can be.
 */
export abstract class ControlElement {}

/** Marks a consistent cut: everything before it belongs to checkpoint `id`, everything after to later ones. */
export class CheckpointBarrier extends ControlElement {
  constructor(
    readonly id: number,
    readonly timestamp: number,
    /** The last checkpoint of a finishing job: sinks commit with it and nothing follows but the end of input. */
    readonly final: boolean,
    /** A savepoint is always a full, self-contained snapshot (never incremental). */
    readonly kind: 'checkpoint' | 'savepoint' = 'checkpoint',
  ) {
    super();
  }
}

/** What flows between weir operators: user records and control elements. */
export type StreamElement<T> = T | ControlElement;

export function isControl(element: unknown): element is ControlElement {
  return element instanceof ControlElement;
}

/** Where an `emit` made by `withControl` sends control elements. */
const CONTROL = Symbol('weir.control');

type EmitWithControl = ((value: never) => void) & { [CONTROL]?: (element: ControlElement) => void };

/**
 * `emitRecord`, a function that takes records only (it skips the check for control elements), marked with where
 * control elements sent through it go (`control`): how an operator chain hands its operators an `emit` without a
 * check per record. Returns `emitRecord` itself.
 */
export function withControl<F extends (value: never) => void>(emitRecord: F, control: (element: StreamElement<unknown>) => void): F {
  (emitRecord as EmitWithControl)[CONTROL] = control;
  return emitRecord;
}

/**
 * Sends a control element (a watermark, a side-output record) through an operator's `emit`: to the control input
 * `withControl` gave it, or through `emit` itself, which then checks what it gets (a multi-input operator's, a
 * test's).
 */
export function emitControl(emit: (value: never) => void, element: ControlElement): void {
  const control = (emit as EmitWithControl)[CONTROL];
  if (control !== undefined) control(element);
  else emit(element as never);
}

/**
 * Event time has reached `timestamp`: no record with an earlier or equal timestamp should follow (late ones may).
 * Flink's watermark; `MAX_WATERMARK` at the end of input fires every pending event-time window.
 */
export class Watermark extends ControlElement {
  constructor(readonly timestamp: number) {
    super();
  }
}

/** Sent once at the end of a bounded input, before the final checkpoint, so windows fire and their output commits. */
export const MAX_WATERMARK = new Watermark(Number.MAX_SAFE_INTEGER);

/**
 * A record for a side output (late data, or a process function's `out.side(tag, value)`): it travels with the main
 * records, so it is covered by the same barriers, and only `sideOutput(tag)` readers take it; every other operator
 * drops it.
 */
export class SideOutputElement<T = unknown> extends ControlElement {
  constructor(
    readonly tag: string,
    readonly value: T,
    readonly timestamp: number | undefined,
  ) {
    super();
  }
}

/**
 * The event timestamp of the record being processed. Records travel unwrapped, so their timestamp rides beside
 * them in this slot, one per attempt: whoever emits a record sets it (or leaves the input's) just before emitting,
 * and since emission is synchronous every operator downstream reads the right value — Flink's reusable
 * StreamRecord, without an object per record.
 */
export interface RecordTimestamp {
  current: number | undefined;
}

/**
 * An operator's current watermark (its event time), one slot shared by its parallel instances: set by the operator
 * runtime as watermarks arrive, read by state TTL in event time. -Infinity before the first watermark.
 */
export interface OperatorWatermark {
  current: number;
}

/**
 * An input stopped (or resumed) producing records (Flink's WatermarkStatus): an idle input does not hold back the
 * watermark of an operator that reads several inputs.
 */
export class WatermarkStatus extends ControlElement {
  constructor(readonly idle: boolean) {
    super();
  }
}

export const WATERMARK_IDLE = new WatermarkStatus(true);
export const WATERMARK_ACTIVE = new WatermarkStatus(false);

/**
 * Checkpoint `id` was aborted (a snapshot failed, it timed out, or it was cancelled): operators still aligning for it
 * stop, release what they held and pass the marker on; its barriers that arrive later are ignored.
 */
export class CancelCheckpointMarker extends ControlElement {
  constructor(readonly id: number) {
    super();
  }
}
