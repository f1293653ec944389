import type { Subscription } from 'rxjs';
import { CancelCheckpointMarker, CheckpointBarrier, ControlElement, SideOutputElement, Watermark, WatermarkStatus } from '../core/elements.js';
import type { AlignmentStats, CheckpointMode } from '../core/graph.js';
import type { Scheduler } from '../core/types.js';
import { WatermarkValve } from './watermarkValve.js';

/** A record that crossed a barrier while a checkpoint was unaligned: it is saved with the checkpoint and replayed. */
export type InFlightRecord = [input: number, value: unknown, timestamp: number | undefined];

export interface AlignerCallbacks {
  /** A record to process now, with its event timestamp. */
  record(input: number, value: unknown, timestamp: number | undefined): void;
  /**
   * Barrier `barrier.id` has arrived on every input (or the checkpoint went unaligned): snapshot, then forward the
   * barrier. `inFlight` resolves, once the barrier has arrived on every input, with the records that overtook the
   * snapshot (empty for an aligned checkpoint).
   */
  aligned(barrier: CheckpointBarrier, inFlight: Promise<InFlightRecord[]>, alignment: AlignmentStats): void;
  /** The checkpoint was abandoned here (cancelled, or subsumed by the newer checkpoint `by`): pass the marker on. */
  cancelled(id: number, reason: 'cancelled' | 'subsumed', by?: number): void;
  /** The combined watermark advanced (the minimum over active inputs). */
  watermark(timestamp: number): void;
  /** Every input became idle, or one became active again. */
  idle(idle: boolean): void;
  /** Every input has ended. */
  complete(): void;
}

interface Alignment {
  barrier: CheckpointBarrier;
  arrived: boolean[];
  startedAt: number;
  unaligned: boolean;
  inFlight: InFlightRecord[];
  finishInFlight?: (records: InFlightRecord[]) => void;
  timeout?: Subscription;
}

/**
 * The barrier handling of an operator with several inputs (Flink's SingleCheckpointBarrierHandler). In exactly-once
 * mode, once barrier n arrived on an input, that input's records are held until barrier n arrived on all inputs;
 * then the operator snapshots, one barrier goes on, and the held elements are released in arrival order. A newer
 * barrier subsumes an alignment in progress; a cancellation marker aborts it; an ended input counts as aligned;
 * barriers of closed checkpoints are ignored. With `alignedTimeout`, an alignment that takes longer turns unaligned:
 * the barrier overtakes the held records, and the records still to come before the barrier on the slow inputs are
 * saved with the checkpoint (they are replayed on restore, since the sources' offsets already cover them). Watermarks
 * pass the alignment like records (a blocked input's are held with them) and are combined by a WatermarkValve.
 */
export class BarrierAligner {
  private alignment: Alignment | undefined;
  /** Elements held during alignment, in arrival order. */
  private held: [number, unknown, number | undefined][] = [];
  /** Highest checkpoint id completed, cancelled or subsumed here. */
  private closed = 0;
  private readonly ended: boolean[];
  private readonly valve: WatermarkValve;

  constructor(
    private readonly inputs: number,
    private readonly mode: CheckpointMode,
    private readonly callbacks: AlignerCallbacks,
    private readonly scheduler: Scheduler,
    private readonly alignedTimeout: number | undefined,
  ) {
    this.ended = new Array<boolean>(inputs).fill(false);
    this.valve = new WatermarkValve(inputs, callbacks);
  }

  /** One element from `input`; `timestamp` is the event timestamp that rode with a record. */
  push(input: number, element: unknown, timestamp: number | undefined): void {
    // Watermarks first: the control element that comes most often by far (Nexmark Q8 has one every ~20 records).
    if (element instanceof Watermark) {
      if (this.isBlocked(input)) this.held.push([input, element, timestamp]);
      else this.valve.watermark(input, element.timestamp);
      return;
    }
    if (!(element instanceof ControlElement)) return this.pushRecord(input, element, timestamp);
    if (element instanceof CheckpointBarrier) this.onBarrier(input, element);
    else if (element instanceof CancelCheckpointMarker) this.onCancel(element.id);
    else if (this.isBlocked(input)) this.held.push([input, element, timestamp]);
    else if (element instanceof WatermarkStatus) this.valve.status(input, element.idle);
    // Side-output records of an upstream operator are not read by multi-input operators.
    else if (!(element instanceof SideOutputElement)) return;
  }

  /** Whether a checkpoint is aligning: until then a record goes straight on, as `pushRecord` would send it. */
  get aligning(): boolean {
    return this.alignment !== undefined;
  }

  /** `push` for an element its producer knows to be a record (see `DirectObserver.nextRecord`). */
  pushRecord(input: number, value: unknown, timestamp: number | undefined): void {
    const alignment = this.alignment;
    if (alignment !== undefined && alignment.arrived[input]) {
      if (!alignment.unaligned && this.mode === 'exactly-once') {
        this.held.push([input, value, timestamp]);
        return;
      }
    } else if (alignment?.unaligned) {
      alignment.inFlight.push([input, value, timestamp]);
    }
    this.callbacks.record(input, value, timestamp);
  }

  /** `input` reached its end: it counts as aligned, and no longer holds back the watermark. */
  end(input: number): void {
    if (this.ended[input]) return;
    this.ended[input] = true;
    if (this.alignment) {
      this.alignment.arrived[input] = true;
      this.checkAligned();
    }
    this.valve.end(input);
    if (this.ended.every(Boolean)) {
      this.release();
      this.callbacks.complete();
    }
  }

  /** Cancels a pending alignment timer: the attempt is over. */
  dispose(): void {
    this.alignment?.timeout?.unsubscribe();
  }

  private isBlocked(input: number): boolean {
    const alignment = this.alignment;
    return alignment !== undefined && !alignment.unaligned && this.mode === 'exactly-once' && alignment.arrived[input]!;
  }

  private onBarrier(input: number, barrier: CheckpointBarrier): void {
    if (barrier.id <= this.closed) return;
    let alignment = this.alignment;
    // A barrier older than the checkpoint aligning is stale: it must not count as this input's barrier n.
    if (alignment !== undefined && barrier.id < alignment.barrier.id) return;
    if (alignment !== undefined && barrier.id > alignment.barrier.id) {
      // Flink aborts a checkpoint whose alignment is overtaken by a newer barrier (it is subsumed).
      this.abort(alignment, 'subsumed', barrier.id);
      alignment = undefined;
    }
    if (alignment === undefined) {
      alignment = { barrier, arrived: this.ended.slice(), startedAt: this.scheduler.now(), unaligned: false, inFlight: [] };
      this.alignment = alignment;
      if (this.mode === 'exactly-once' && this.alignedTimeout !== undefined) {
        const pending = alignment;
        pending.timeout = this.scheduler.schedule(() => this.goUnaligned(pending), this.alignedTimeout);
      }
    }
    alignment.arrived[input] = true;
    this.checkAligned();
  }

  private checkAligned(): void {
    const alignment = this.alignment!;
    if (!alignment.arrived.every(Boolean)) return;
    alignment.timeout?.unsubscribe();
    this.alignment = undefined;
    this.closed = alignment.barrier.id;
    if (alignment.unaligned) {
      alignment.finishInFlight!(alignment.inFlight);
      return;
    }
    this.callbacks.aligned(alignment.barrier, Promise.resolve([]), this.stats(alignment));
    this.release();
  }

  private goUnaligned(alignment: Alignment): void {
    if (this.alignment !== alignment) return;
    alignment.unaligned = true;
    const inFlight = new Promise<InFlightRecord[]>((resolve) => (alignment.finishInFlight = resolve));
    this.callbacks.aligned(alignment.barrier, inFlight, this.stats(alignment));
    this.release();
  }

  private stats(alignment: Alignment): AlignmentStats {
    return { alignmentMs: this.scheduler.now() - alignment.startedAt, heldRecords: this.held.length };
  }

  private onCancel(id: number): void {
    if (id <= this.closed) return;
    const alignment = this.alignment;
    if (alignment !== undefined && alignment.barrier.id === id) {
      this.abort(alignment, 'cancelled');
      return;
    }
    // A marker for a newer checkpoint (its barrier never reached this input) also ends the alignment of an older one,
    // and closes the newer checkpoint here too, so that its barriers, should any still come, are ignored (as Flink's
    // SingleCheckpointBarrierHandler does).
    if (alignment !== undefined && alignment.barrier.id < id) this.abort(alignment, 'subsumed', id);
    this.closed = id;
    this.callbacks.cancelled(id, 'cancelled');
  }

  private abort(alignment: Alignment, reason: 'cancelled' | 'subsumed', by?: number): void {
    alignment.timeout?.unsubscribe();
    this.alignment = undefined;
    this.closed = Math.max(this.closed, alignment.barrier.id);
    alignment.finishInFlight?.(alignment.inFlight);
    this.callbacks.cancelled(alignment.barrier.id, reason, by);
    this.release();
  }

  /** Replays held elements in arrival order; an element may start a new alignment and be held again. */
  private release(): void {
    const held = this.held;
    this.held = [];
    for (let i = 0; i < held.length; i++) {
      const [input, element, timestamp] = held[i]!;
      this.push(input, element, timestamp);
    }
  }
}
