import type { Subscription } from 'rxjs';
import { keyGroupOf } from '../core/keyGroups.js';
import type { Json, Key, KeyGroupRange, KeyedStateBackend, Scheduler } from '../core/types.js';
import { decodeKey, encodeKey } from '../state/keyCodec.js';
import { TimerQueue } from './timerQueue.js';

export type TimeDomain = 'event-time' | 'processing-time';

/**
 * The timer snapshots among the operator states every instance of an operator saved (a rescaled instance takes those
 * of its key groups from all of them); states without timers, or none at all, are skipped.
 */
export function savedTimers(states: readonly unknown[]): Json[] {
  return states.flatMap((state) => {
    const timers = (state as { timers?: Json } | null | undefined)?.timers;
    return timers === undefined ? [] : [timers];
  });
}

/** Called for each timer that fires, with its key already current in the state backend. */
export type TimerCallback = (domain: TimeDomain, time: number, key: Key, namespace: string) => void;

/** Timers as saved in an operator's snapshot: `[time, namespace, encodedKey]` per timer. */
interface TimersSnapshot {
  watermark: number | null;
  event: [number, string, unknown][];
  processing: [number, string, unknown][];
}

/**
 * Flink's InternalTimerService for one keyed operator instance: event-time timers fire when the watermark passes
 * them, processing-time timers when the job's scheduler clock does. Timers are scoped to a key and a namespace (a
 * window, or '' for a process function) and deduplicated. They are saved with every checkpoint and restored by key
 * group, so after a restore they fire exactly as they would have without the failure.
 */
export class TimerService {
  private readonly eventTimers = new TimerQueue();
  private readonly processingTimers = new TimerQueue();
  private scheduled: { time: number; action: Subscription } | undefined;
  /** The operator's current event time; -Infinity until the first watermark. */
  currentWatermark = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly backend: KeyedStateBackend,
    private readonly scheduler: Scheduler,
    private readonly onTimer: TimerCallback,
  ) {}

  currentProcessingTime(): number {
    return this.scheduler.now();
  }

  registerEventTimeTimer(key: Key, namespace: string, time: number): void {
    this.eventTimers.add(time, namespace, key);
  }

  deleteEventTimeTimer(key: Key, namespace: string, time: number): void {
    this.eventTimers.delete(time, namespace, key);
  }

  registerProcessingTimeTimer(key: Key, namespace: string, time: number): void {
    this.processingTimers.add(time, namespace, key);
    this.scheduleNext();
  }

  deleteProcessingTimeTimer(key: Key, namespace: string, time: number): void {
    this.processingTimers.delete(time, namespace, key);
  }

  /**
   * Sets the watermark and fires, in time order, every event-time timer at or before it (or, given `upTo`, at or
   * before that: an operator keeping some of its event-time timers itself fires those due first in between).
   */
  advanceWatermark(watermark: number, upTo = watermark): void {
    this.currentWatermark = watermark;
    this.fireUpTo(this.eventTimers, upTo, 'event-time');
  }

  private fireUpTo(queue: TimerQueue, time: number, domain: TimeDomain): void {
    for (let next = queue.peek(); next !== undefined && next <= time; next = queue.peek()) {
      const { time: due, timers } = queue.takeEarliest()!;
      for (const [namespace, keys] of timers) {
        for (const key of keys) {
          this.backend.setCurrentKey(key);
          this.onTimer(domain, due, key, namespace);
        }
      }
    }
  }

  /** Keeps one scheduler action pending, for the earliest processing-time timer. */
  private scheduleNext(): void {
    const earliest = this.processingTimers.peek();
    if (this.scheduled && earliest !== undefined && this.scheduled.time <= earliest) return;
    this.scheduled?.action.unsubscribe();
    this.scheduled = undefined;
    if (earliest === undefined) return;
    const action = this.scheduler.schedule(() => {
      this.scheduled = undefined;
      this.fireUpTo(this.processingTimers, this.scheduler.now(), 'processing-time');
      this.scheduleNext();
    }, Math.max(0, earliest - this.scheduler.now()));
    this.scheduled = { time: earliest, action };
  }

  /** Visits every pending event-time timer, e.g. for an operator to rebuild what it keeps beside its state after a restore. */
  forEachEventTimer(visit: (time: number, namespace: string, key: Key) => void): void {
    this.eventTimers.forEach(visit);
  }

  /**
   * A copy of every pending timer and the watermark, taken synchronously at a barrier. `kept` visits the event-time
   * timers an operator keeps itself instead (a window operator's sweep of window ends), saved as timers of its own,
   * so that any reader of the snapshot, and a restore, sees the same timers either way.
   */
  snapshot(kept?: (visit: (time: number, namespace: string, key: Key) => void) => void): Json {
    const collect = (queue: TimerQueue) => {
      const timers: [number, string, unknown][] = [];
      queue.forEach((time, namespace, key) => timers.push([time, namespace, encodeKey(key)]));
      return timers;
    };
    const event = collect(this.eventTimers);
    kept?.((time, namespace, key) => event.push([time, namespace, encodeKey(key)]));
    const snapshot: TimersSnapshot = {
      watermark: Number.isFinite(this.currentWatermark) ? this.currentWatermark : null,
      event,
      processing: collect(this.processingTimers),
    };
    return snapshot as unknown as Json;
  }

  /** Restores the timers of the keys in `range`; processing-time timers already due fire on the next tick. */
  restore(snapshots: Json[], maxParallelism: number, range: KeyGroupRange): void {
    for (const json of snapshots) {
      const snapshot = json as unknown as TimersSnapshot;
      if (snapshot.watermark !== null) this.currentWatermark = Math.max(this.currentWatermark, snapshot.watermark);
      const load = (timers: [number, string, unknown][], queue: TimerQueue) => {
        for (const [time, namespace, encoded] of timers) {
          const key = decodeKey(encoded);
          const group = keyGroupOf(key, maxParallelism);
          if (group >= range.start && group <= range.end) queue.add(time, namespace, key);
        }
      };
      load(snapshot.event, this.eventTimers);
      load(snapshot.processing, this.processingTimers);
    }
    this.scheduleNext();
  }

  dispose(): void {
    this.scheduled?.action.unsubscribe();
    this.scheduled = undefined;
  }
}
