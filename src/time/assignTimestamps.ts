import { JobDefinitionError, MalformedRecordError } from '../core/errors.js';
import { WATERMARK_ACTIVE, WATERMARK_IDLE, Watermark, emitControl, type RecordTimestamp } from '../core/elements.js';
import { ownCopy } from '../core/ownCopy.js';
import { Flow } from '../core/flow.js';
import { operate } from '../operators/operate.js';
import { BoundedOutOfOrderness, checkWatermarkOptions, everyInterval, type SavedEventTime, type WatermarkOptions } from './watermarkGenerator.js';

export type { WatermarkOptions } from './watermarkGenerator.js';

/** The event timestamp `timestampOf` gives `value`, or a typed error naming the operator and the record. */
export function timestampFor<T>(timestampOf: (value: T) => number, value: T, uid: string): number {
  const timestamp = timestampOf(value);
  if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
    throw new MalformedRecordError(`operator '${uid}': the timestamp of ${JSON.stringify(value)?.slice(0, 200)} is ${String(timestamp)}, not a finite number of ms`);
  }
  return timestamp;
}

/**
 * The input of `assignTimestamps`: stamps the record, sends it, then the watermark it raised. Compiled per operator
 * (see `ownCopy`): self-contained.
 */
const stampRecord =
  <T>(
    stamp: typeof timestampFor,
    timestampOf: (value: T) => number,
    uid: string,
    record: RecordTimestamp,
    generator: BoundedOutOfOrderness,
    emit: (value: T) => void,
  ) =>
  (value: T): void => {
    const timestamp = stamp(timestampOf, value, uid);
    record.current = timestamp;
    const raised = generator.onTimestamp(timestamp);
    emit(value);
    generator.afterRecord(raised);
  };

/**
 * Gives records their event timestamp and generates watermarks with Flink's bounded-out-of-orderness strategy:
 * the watermark is the largest timestamp seen minus `outOfOrderness` minus 1. Upstream watermarks are replaced,
 * except the end-of-input one. The largest timestamp seen is part of every checkpoint. For a source whose subtask
 * reads several splits, prefer the source's own strategy (`job.source(src, { watermarks })`), which tracks each split.
 * @example clicks.pipe(assignTimestamps((c) => c.ts, { outOfOrderness: 5_000 }))
 */
export function assignTimestamps<T>(timestampOf: (value: T) => number, options: WatermarkOptions & { uid?: string } = {}): (input: Flow<T>) => Flow<T> {
  const name = 'assignTimestamps';
  const checked = checkWatermarkOptions(name, options);
  return (input) => {
    if (input.timestamped) {
      throw new JobDefinitionError(`${name}: the flow already has timestamps and watermarks (from an earlier assignTimestamps or the source's watermarks); use one watermark strategy per flow`);
    }
    return operate<T, T>(input, {
      kind: name,
      uid: options.uid,
      stateful: true,
      timestamped: true,
      setup(task, emit) {
        const record = task.record;
        const generator = new BoundedOutOfOrderness(
          checked,
          {
            watermark: (timestamp) => emitControl(emit, new Watermark(timestamp)),
            idle: (idle) => emitControl(emit, idle ? WATERMARK_IDLE : WATERMARK_ACTIVE),
          },
          task.restoredOperatorState as Partial<SavedEventTime> | undefined,
        );
        const stop = everyInterval(task.scheduler, checked.interval, () => generator.tick());
        return {
          onRecord: ownCopy(stampRecord)(timestampFor, timestampOf, task.uid, record, generator, emit),
          onWatermark(watermark, forward) {
            // Only the end of input passes: this operator is the flow's watermark strategy from here on.
            if (watermark.timestamp >= Number.MAX_SAFE_INTEGER) forward();
          },
          onBarrier(barrier, forward) {
            task.snapshot(barrier, () => ({ operator: generator.snapshot() }), forward);
          },
          dispose: stop,
        };
      },
    });
  };
}
