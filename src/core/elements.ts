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
  ) {
    super();
  }
}

/** What flows between weir operators: user records and control elements. */
export type StreamElement<T> = T | ControlElement;

export function isControl(element: unknown): element is ControlElement {
  return element instanceof ControlElement;
}
