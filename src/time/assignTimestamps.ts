import { JobDefinitionError, MalformedRecordError } from '../core/errors.js';
import { WATERMARK_ACTIVE, WATERMARK_IDLE, Watermark } from '../core/elements.js';
import { Flow } from '../core/flow.js';
import { operate } from '../operators/operate.js';

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

/**
 * Gives records their event timestamp and generates watermarks with Flink's bounded-out-of-orderness strategy:
 * the watermark is the largest timestamp seen minus `outOfOrderness` minus 1. Upstream watermarks are replaced,
 * except the end-of-input one. The largest timestamp seen is part of every checkpoint.
 * @example clicks.pipe(assignTimestamps((c) => c.ts, { outOfOrderness: 5_000 }))
 */
export function assignTimestamps<T>(timestampOf: (value: T) => number, options: WatermarkOptions & { uid?: string } = {}): (input: Flow<T>) => Flow<T> {
  const { outOfOrderness = 0, idleTimeout, interval = 200 } = options;
  const name = 'assignTimestamps';
  if (!(Number.isFinite(outOfOrderness) && outOfOrderness >= 0)) throw new JobDefinitionError(`${name}: outOfOrderness must be a finite number of ms ≥ 0, got ${outOfOrderness}`);
  if (idleTimeout !== undefined && !(idleTimeout > 0)) throw new JobDefinitionError(`${name}: idleTimeout must be > 0 ms, got ${idleTimeout}`);
  if (!(Number.isFinite(interval) && interval >= 0)) throw new JobDefinitionError(`${name}: interval must be a finite number of ms ≥ 0, got ${interval}`);
  return (input) => {
    if (input.timestamped) {
      throw new JobDefinitionError(`${name}: the flow already has timestamps and watermarks from an earlier assignTimestamps; use one watermark strategy per flow`);
    }
    return operate<T, T>(input, {
      kind: name,
      uid: options.uid,
      stateful: true,
      timestamped: true,
      setup(task, emit) {
        const record = task.record;
        const saved = task.restoredOperatorState as { maxTimestamp?: number | null; watermark?: number | null } | undefined;
        let maxTimestamp = typeof saved?.maxTimestamp === 'number' ? saved.maxTimestamp : Number.NEGATIVE_INFINITY;
        // The last watermark sent is restored too: sending it again after a restore would fire, early, the timers
        // registered since at or before it, which the uninterrupted run fires only at the next watermark that advances.
        let emitted = typeof saved?.watermark === 'number' ? saved.watermark : Number.NEGATIVE_INFINITY;
        let recordsSinceTick = 0;
        let quietFor = 0;
        let idle = false;
        const emitWatermark = () => {
          const watermark = maxTimestamp - outOfOrderness - 1;
          if (watermark > emitted) {
            emitted = watermark;
            emit(new Watermark(watermark) as never);
          }
        };
        const tick = () => {
          if (recordsSinceTick > 0) {
            recordsSinceTick = 0;
            quietFor = 0;
            emitWatermark();
          } else if (idleTimeout !== undefined && !idle && (quietFor += interval) >= idleTimeout) {
            idle = true;
            emit(WATERMARK_IDLE as never);
          }
        };
        const action = interval > 0 ? task.scheduler.schedule(function repeat(this: { schedule(s?: unknown, d?: number): unknown }) {
          tick();
          this.schedule(undefined, interval);
        }, interval) : undefined;
        return {
          onRecord(value) {
            const timestamp = timestampOf(value);
            if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
              throw new MalformedRecordError(`operator '${task.uid}': the timestamp of ${JSON.stringify(value)?.slice(0, 200)} is ${String(timestamp)}, not a finite number of ms`);
            }
            record.current = timestamp;
            const raised = timestamp > maxTimestamp;
            if (raised) maxTimestamp = timestamp;
            recordsSinceTick++;
            if (idle) {
              idle = false;
              emit(WATERMARK_ACTIVE as never);
            }
            emit(value);
            // Only a record that raised the largest timestamp can advance the watermark (most do not, out of order).
            if (raised && interval === 0) emitWatermark();
          },
          onWatermark(watermark, forward) {
            // Only the end of input passes: this operator is the flow's watermark strategy from here on.
            if (watermark.timestamp >= Number.MAX_SAFE_INTEGER) forward();
          },
          onBarrier(barrier, forward) {
            const finite = (time: number) => (Number.isFinite(time) ? time : null);
            task.snapshot(barrier, () => ({ operator: { maxTimestamp: finite(maxTimestamp), watermark: finite(emitted) } }), forward);
          },
          dispose: () => action?.unsubscribe(),
        };
      },
    });
  };
}
