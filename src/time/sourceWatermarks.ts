import { WATERMARK_ACTIVE, WATERMARK_IDLE, Watermark, isControl, type RecordTimestamp, type StreamElement } from '../core/elements.js';
import type { Json, Scheduler } from '../core/types.js';
import type { DirectObserver } from '../task/directObservable.js';
import type { SplitTracking } from '../task/splitTracking.js';
import { WatermarkValve } from '../task/watermarkValve.js';
import { timestampFor } from './assignTimestamps.js';
import { BoundedOutOfOrderness, checkWatermarkOptions, everyInterval, type SavedEventTime, type WatermarkOptions } from './watermarkGenerator.js';

/**
 * A watermark strategy given on the source (Flink's FLIP-27 `WatermarkStrategy` passed to `fromSource`): records
 * get their timestamp as they are read, and each split has its own bounded-out-of-orderness generator.
 */
export interface SourceWatermarkOptions<T> extends WatermarkOptions {
  /** The record's event time in ms (from its payload, or a header the source put in it). */
  timestamp: (value: T) => number;
}

export interface SplitWatermarksOptions<T> {
  readonly uid: string;
  readonly strategy: SourceWatermarkOptions<T>;
  /** The subtask's reader: a split reader tells which split each read came from; any other is one split. */
  readonly reader: Partial<SplitTracking>;
  readonly record: RecordTimestamp;
  readonly scheduler: Scheduler;
  /** The operator states restored for the source (any parallelism): each split's event time, by split id. */
  readonly restored: readonly Json[];
}

/** What a source subtask with a watermark strategy saves beside its offset: each split's event time, by split id. */
export type SavedSplitEventTimes = Record<string, SavedEventTime>;

/** The id under which a source without splits saves its one reader's event time. */
const WHOLE_SOURCE = '';

/**
 * Per-split watermarks of one source subtask (Flink's split-aware watermark generation): between the subtask's
 * reader and the operators after it, gives each record its timestamp and feeds it to its split's generator; the
 * subtask's watermark is the minimum over its splits that are neither idle nor ended (the same `WatermarkValve` as
 * an operator's inputs), so a split whose event time lags does not make the others' records late, and with
 * `idleTimeout` an empty split stops holding the rest back. Each split's largest timestamp and watermark are saved
 * with the offsets and restored by split id, so a restore at any parallelism resumes the same watermark.
 */
export class SplitWatermarks<T> {
  private readonly generators: BoundedOutOfOrderness[];
  private readonly ids: readonly string[];
  private readonly stopTicks: () => void;
  private readonly valve: WatermarkValve;
  /** Where watermarks go: the operators after the subtask, once its runner emits (`into`). */
  private downstream: DirectObserver<StreamElement<T>> | undefined;

  constructor(private readonly options: SplitWatermarksOptions<T>) {
    const { reader, scheduler, restored } = options;
    const checked = checkWatermarkOptions(`source '${options.uid}': watermarks`, options.strategy);
    this.ids = reader.splitIds ?? [WHOLE_SOURCE];
    const saved = restoredEventTimes(restored);
    const valve = new WatermarkValve(this.ids.length, {
      watermark: (timestamp) => this.downstream?.next(new Watermark(timestamp)),
      idle: (idle) => this.downstream?.next(idle ? WATERMARK_IDLE : WATERMARK_ACTIVE),
    });
    for (const index of reader.endedSplits ?? []) valve.end(index);
    this.generators = this.ids.map((id, index) => new BoundedOutOfOrderness(checked, { watermark: (timestamp) => valve.watermark(index, timestamp), idle: (idle) => valve.status(index, idle) }, saved.get(id)));
    this.valve = valve;
    reader.onSplitEnd = (index) => valve.end(index);
    this.stopTicks = everyInterval(scheduler, checked.interval, () => this.generators.forEach((generator) => generator.tick()));
  }

  /** The observer the subtask's runner emits into: records get their timestamps, watermarks go in among them. */
  into(downstream: DirectObserver<StreamElement<T>>): DirectObserver<StreamElement<T>> {
    this.downstream = downstream;
    const { generators } = this;
    const { reader, record, uid } = this.options;
    const timestampOf = this.options.strategy.timestamp;
    return {
      next(element) {
        if (isControl(element)) return downstream.next(element);
        const timestamp = timestampFor(timestampOf, element, uid);
        record.current = timestamp;
        const generator = generators[reader.lastSplit ?? 0]!;
        const raised = generator.onTimestamp(timestamp);
        downstream.next(element);
        generator.afterRecord(raised);
      },
      error: (error) => downstream.error(error),
      complete: () => downstream.complete(),
      dropsAfterEnd: downstream.dropsAfterEnd,
    };
  }

  /**
   * The subtask starts reading: a restored one sends the watermark its splits had (their minimum) once, before any
   * record. The operators after it start afresh, and a subtask whose splits get no new record would otherwise hold
   * them back for good; unlike `assignTimestamps`, which sends nothing until its watermark advances.
   */
  start(): void {
    this.generators.forEach((generator, index) => {
      if (Number.isFinite(generator.watermark)) this.valve.watermark(index, generator.watermark);
    });
  }

  snapshot(): SavedSplitEventTimes {
    return Object.fromEntries(this.ids.map((id, index) => [id, this.generators[index]!.snapshot()]));
  }

  stop(): void {
    this.stopTicks();
  }
}

/** Every split's saved event time, from the source's restored operator states. */
function restoredEventTimes(restored: readonly Json[]): Map<string, Partial<SavedEventTime>> {
  const times = new Map<string, Partial<SavedEventTime>>();
  for (const state of restored) {
    const saved = (state as { eventTime?: SavedSplitEventTimes } | null)?.eventTime;
    if (saved === null || typeof saved !== 'object') continue;
    for (const [id, time] of Object.entries(saved)) times.set(id, time);
  }
  return times;
}
