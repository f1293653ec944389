import { CancelCheckpointMarker, MAX_WATERMARK, type CheckpointBarrier, type StreamElement } from '../core/elements.js';
import { OperatorCounters } from '../core/operatorCounters.js';
import type { DirectObserver } from './directObservable.js';
import type { Json, SourceReader } from '../core/types.js';
import { yieldToEventLoop } from '../core/yieldToEventLoop.js';
import { ownCopy } from '../core/ownCopy.js';
import { ArrayReader } from './arrayReader.js';
import type { AttemptBackpressure } from './backpressure.js';

export interface SourceRunnerHooks {
  /** Records per read: big enough to amortise the yield, small enough that barriers are not held back long. */
  readonly chunkSize: number;
  /** Raised while an operator cannot take more records: the runner reads no chunk until it is released. */
  readonly backpressure?: AttemptBackpressure;
  /** The barrier is about to be emitted after the record at `offset`: acknowledge the offset. */
  snapshot(barrier: CheckpointBarrier, offset: Json, forward: () => void): void;
  /** The input is exhausted (or the job is stopping): the job decides when the flow ends. */
  finished(): void;
  /** The runner starts reading (after every task of the attempt subscribed): what goes before the first record. */
  started?(): void;
  /** Where the runner counts the records it emits and the time it is busy, idle and backpressured, for metrics. */
  readonly counters?: OperatorCounters;
}

/**
 * The thread's clock for busy, idle and backpressured time: wall time spent, not event or scheduler time, read twice
 * per chunk at most (so never per record).
 */
const now = () => performance.now();

/** A runner's loop over a chunk of records (see `SourceRunner.emitRecords`): self-contained. */
const emitRange =
  <T>(next: (value: T) => void) =>
  (records: readonly T[], start: number, end: number): void => {
    for (let i = start; i < end; i++) next(records[i]!);
  };

/**
 * Drives one source for one attempt: reads a chunk, emits it synchronously, yields to the event loop, repeats.
 * Barriers go in only between chunks, right after the offset they record, which is what makes a checkpoint's cut
 * consistent: every record before the barrier is covered by the offset, none after it.
 */
export class SourceRunner<T> {
  private readonly barriers: CheckpointBarrier[] = [];
  private readonly cancels: CancelCheckpointMarker[] = [];
  private wake: (() => void) | undefined;
  private stopped = false;
  private ended = false;
  /** The reader's offset when the read in flight started; what a barrier saves until the read's records went out. */
  private offsetWhileReading: { offset: Json } | undefined;

  /**
   * Emits `records[start..end)`: records only, so a consumer that takes them as such skips its check for control
   * elements. Compiled per runner (see `ownCopy`), so that its call reaches this runner's consumer only and V8 inlines
   * the first operator into the loop.
   */
  private readonly emitRecords: (records: readonly T[], start: number, end: number) => void;

  constructor(
    private readonly reader: SourceReader<T>,
    private readonly subscriber: DirectObserver<StreamElement<T>>,
    private readonly hooks: SourceRunnerHooks,
  ) {
    const next = subscriber.nextRecord ?? ((value: T) => subscriber.next(value));
    this.emitRecords = ownCopy(emitRange)(next);
    const { counters } = hooks;
    if (counters === undefined) return;
    counters.source = true;
    if (reader.lag !== undefined) counters.lag = () => reader.lag?.();
  }

  inject(barrier: CheckpointBarrier): void {
    this.barriers.push(barrier);
    this.wake?.();
  }

  /** Sends a cancellation marker for an aborted checkpoint at the next chunk boundary (or drops its queued barrier). */
  injectCancel(id: number): void {
    const queued = this.barriers.findIndex((barrier) => barrier.id === id);
    if (queued >= 0) this.barriers.splice(queued, 1);
    else if (!this.stopped) this.cancels.push(new CancelCheckpointMarker(id));
    this.wake?.();
  }

  /** Stops reading: the flow ends with the next final barrier (or `complete`) the job sends. */
  drain(): void {
    if (this.ended) return;
    this.ended = true;
    this.hooks.finished();
    this.wake?.();
  }

  /** Ends the flow now, without a final barrier: used when checkpointing is off. */
  complete(): void {
    this.stopped = true;
    this.subscriber.complete();
    this.wake?.();
  }

  /** Teardown: the attempt is over. */
  stop(): void {
    this.stopped = true;
    this.wake?.();
    void this.reader.close?.();
  }

  async run(): Promise<void> {
    const { reader, hooks } = this;
    const counters = hooks.counters ?? UNCOUNTED;
    hooks.started?.();
    let reading: Promise<T[] | null> | undefined;
    while (!this.stopped) {
      if (this.emitBarriers()) return;
      if (this.ended) {
        await this.sleep();
        continue;
      }
      const pressure = hooks.backpressure?.released();
      if (pressure !== undefined) {
        // Barriers and cancellation markers go in while the runner waits, as while it waits for input.
        const pausedAt = now();
        await Promise.race([pressure, this.sleep()]);
        counters.backpressuredMs += now() - pausedAt;
        continue;
      }
      if (reader instanceof ArrayReader) {
        const busyAt = now();
        const emitted = this.emitInPlace(reader as ArrayReader<T>, counters);
        counters.busyMs += now() - busyAt;
        if (emitted) await yieldToEventLoop();
        continue;
      }
      let batch: T[] | null | Promise<T[] | null> = reading ?? reader.read(hooks.chunkSize);
      if (batch instanceof Promise) {
        // What went out before this read: a barrier that goes in while it waits saves this offset, even if the read
        // has come back (and its reader moved past its records) by the time the barrier is handled.
        if (reading === undefined) this.offsetWhileReading = { offset: reader.offset() };
        reading = batch;
        const waitingAt = now();
        // A barrier that arrives while the source waits for input goes out at once (no record is half-emitted).
        const woken = await Promise.race([batch, this.sleep().then(() => WOKEN)]);
        counters.idleMs += now() - waitingAt;
        if (woken === WOKEN) continue;
        batch = woken as T[] | null;
      }
      reading = undefined;
      this.offsetWhileReading = undefined;
      if (this.stopped) return;
      if (batch === null) {
        this.endOfInput();
        continue;
      }
      const busyAt = now();
      counters.emitted += batch.length;
      this.emitRecords(batch, 0, batch.length);
      counters.busyMs += now() - busyAt;
      await yieldToEventLoop();
    }
  }

  /** Emits the next chunk of an in-memory reader straight from its array; false at the end of input. */
  private emitInPlace(reader: ArrayReader<T>, counters: OperatorCounters): boolean {
    const { records, index: start } = reader;
    if (start >= reader.end) {
      this.endOfInput();
      return false;
    }
    const end = Math.min(start + this.hooks.chunkSize, reader.end);
    // The offset covers the whole chunk before it is emitted, as after a `read`.
    reader.index = end;
    counters.emitted += end - start;
    this.emitRecords(records, start, end);
    return true;
  }

  /**
   * The end of a bounded input is the end of event time: every pending event-time window fires now, before the final
   * checkpoint, so that its output is committed with it.
   */
  private endOfInput(): void {
    this.subscriber.next(MAX_WATERMARK);
    this.drain();
  }

  /** Emits the queued barriers; true when one was final and the flow is now complete. */
  private emitBarriers(): boolean {
    while (this.cancels.length > 0) this.subscriber.next(this.cancels.shift()!);
    while (this.barriers.length > 0) {
      const barrier = this.barriers.shift()!;
      this.hooks.snapshot(barrier, (this.offsetWhileReading ?? { offset: this.reader.offset() }).offset, () => this.subscriber.next(barrier));
      if (barrier.final) {
        this.stopped = true;
        this.subscriber.complete();
        return true;
      }
    }
    return false;
  }

  private sleep(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
    });
  }
}

const WOKEN = Symbol('woken');

/** Where a runner counts when nothing reads the counts. */
const UNCOUNTED = new OperatorCounters();
