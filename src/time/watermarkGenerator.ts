import { JobDefinitionError } from '../core/errors.js';
import type { Scheduler } from '../core/types.js';
import type { ValveOutput } from '../task/watermarkValve.js';

export interface WatermarkOptions {
  /** How far behind the largest timestamp seen records may still arrive (Flink's bounded out-of-orderness). */
  outOfOrderness?: number;
  /**
   * An input without records for this long is marked idle, so that it stops holding back the watermark of
   * operators with several inputs; it becomes active again with its next record.
   */
  idleTimeout?: number;
  /**
   * Milliseconds between watermarks on the job's scheduler (Flink's auto-watermark interval, 200 by default);
   * `0` emits a watermark after every record that advances it, which makes tests deterministic.
   */
  interval?: number;
}

/** What a generator saves in a checkpoint: JSON, so an infinite time is `null`. */
export type SavedEventTime = {
  maxTimestamp: number | null;
  watermark: number | null;
};

/** The options with their defaults, checked; `name` is the operator's, for messages. */
export function checkWatermarkOptions(name: string, options: WatermarkOptions): Required<Omit<WatermarkOptions, 'idleTimeout'>> & Pick<WatermarkOptions, 'idleTimeout'> {
  const { outOfOrderness = 0, idleTimeout, interval = 200 } = options;
  if (!(Number.isFinite(outOfOrderness) && outOfOrderness >= 0)) throw new JobDefinitionError(`${name}: outOfOrderness must be a finite number of ms ≥ 0, got ${outOfOrderness}`);
  if (idleTimeout !== undefined && !(idleTimeout > 0)) throw new JobDefinitionError(`${name}: idleTimeout must be > 0 ms, got ${idleTimeout}`);
  if (!(Number.isFinite(interval) && interval >= 0)) throw new JobDefinitionError(`${name}: interval must be a finite number of ms ≥ 0, got ${interval}`);
  return { outOfOrderness, idleTimeout, interval };
}

const timeOf = (saved: number | null | undefined) => (typeof saved === 'number' ? saved : Number.NEGATIVE_INFINITY);

/**
 * Flink's bounded-out-of-orderness watermark generator for one input (a flow, or one split of a source): the
 * watermark is the largest timestamp seen minus `outOfOrderness` minus 1, sent on each `tick` (or after each record
 * that raises it with `interval: 0`); with `idleTimeout`, ticks without records mark the input idle until its next
 * record (Flink's `withIdleness`).
 */
export class BoundedOutOfOrderness {
  private maxTimestamp: number;
  /**
   * The last watermark sent, restored too: sending it again after a restore would fire, early, the timers registered
   * since at or before it, which the uninterrupted run fires only at the next watermark that advances.
   */
  private emitted: number;
  private recordsSinceTick = 0;
  private quietFor = 0;
  private idle = false;

  constructor(
    private readonly options: ReturnType<typeof checkWatermarkOptions>,
    private readonly output: ValveOutput,
    saved?: Partial<SavedEventTime>,
  ) {
    this.maxTimestamp = timeOf(saved?.maxTimestamp);
    this.emitted = timeOf(saved?.watermark);
  }

  /** The last watermark sent (−∞ before the first). */
  get watermark(): number {
    return this.emitted;
  }

  /** A record with `timestamp` arrives (before it goes on); true when it raised the largest timestamp seen. */
  onTimestamp(timestamp: number): boolean {
    const raised = timestamp > this.maxTimestamp;
    if (raised) this.maxTimestamp = timestamp;
    this.recordsSinceTick++;
    if (this.idle) {
      this.idle = false;
      this.output.idle(false);
    }
    return raised;
  }

  /** After the record went on: with `interval: 0`, a record that raised the largest timestamp sends the watermark. */
  afterRecord(raised: boolean): void {
    // Only a record that raised the largest timestamp can advance the watermark (most do not, out of order).
    if (raised && this.options.interval === 0) this.emit();
  }

  /** The periodic watermark (Flink's `onPeriodicEmit`) and the idleness check. */
  tick(): void {
    const { idleTimeout, interval } = this.options;
    if (this.recordsSinceTick > 0) {
      this.recordsSinceTick = 0;
      this.quietFor = 0;
      this.emit();
    } else if (idleTimeout !== undefined && !this.idle && (this.quietFor += interval) >= idleTimeout) {
      this.idle = true;
      this.output.idle(true);
    }
  }

  snapshot(): SavedEventTime {
    const finite = (time: number) => (Number.isFinite(time) ? time : null);
    return { maxTimestamp: finite(this.maxTimestamp), watermark: finite(this.emitted) };
  }

  private emit(): void {
    const watermark = this.maxTimestamp - this.options.outOfOrderness - 1;
    if (watermark > this.emitted) {
      this.emitted = watermark;
      this.output.watermark(watermark);
    }
  }
}

/** Calls `tick` every `interval` ms on the scheduler (none with `interval: 0`); the result stops it. */
export function everyInterval(scheduler: Scheduler, interval: number, tick: () => void): () => void {
  if (interval === 0) return () => undefined;
  const action = scheduler.schedule(function repeat(this: { schedule(s?: unknown, d?: number): unknown }) {
    tick();
    this.schedule(undefined, interval);
  }, interval);
  return () => action.unsubscribe();
}
