import type { Key } from '../core/types.js';
import type { Flow } from '../core/flow.js';
import { SideOutputElement, emitControl } from '../core/elements.js';
import { keyedOperate } from '../operators/keyedOperate.js';
import { copyValue } from '../state/copyValue.js';
import type { TimeDomain } from '../time/timerService.js';
import { windowFunctionContext } from './windowFunctionContext.js';
import { timerHandlers, windowTimers } from './windowTimers.js';
import { UserFunctionGuard } from '../core/userFunctionFailure.js';
import { LATE_DATA } from './lateData.js';
import { HeldSlices } from './heldSlices.js';
import { WindowCache, gcd, windowOfId, windowStart } from './timeWindow.js';
import type { ProcessWindowFunction, WindowSlicing } from './windowFunction.js';
import type { WindowedFlow } from './windowedFlow.js';
import type { Window } from './windowTypes.js';

const VOID = '';

/**
 * A window's firing reads all its slices, once per key and window end (Flink's slicing does the same): a key with
 * few records then costs slices-per-window reads for each of its windows, where one state per window costs one
 * update per record and window. Beyond this many slices per window the per-window state is kept instead.
 */
const MAX_SLICES_PER_WINDOW = 100;

/** How often (records) and after how many lookups the index of held slices is weighed against what it saves. */
const CHECK_EVERY = 65_536;
const CHECK_AFTER = 200_000;

/** Whether windows of this geometry are worth slicing. */
export function slicesPay({ size, slide }: { size: number; slide: number }): boolean {
  return size / gcd(size, slide) <= MAX_SLICES_PER_WINDOW;
}

/**
 * Tumbling and sliding event-time windows with a pre-aggregating function (reduce, aggregate) and the default
 * trigger, by slices, as Flink SQL's window aggregation ("slicing") and Scotty do: time is cut into slices of
 * gcd(size, slide) ms, each record updates the one slice it falls in, and a window's result is the merge of its
 * slices when it fires. A record then costs one state update whatever size / slide is.
 *
 * What stays as the window operator does it: the result of window `[s, e)` is emitted when the watermark reaches
 * `e - 1`, stamped `e - 1`; a record within the allowed lateness of a window that fired adds itself and fires it
 * again at once; a record too late for every window goes to the late-data side output.
 *
 * State: the slices of a key, in the window state's name and kind, the namespace of slice `[p, p + length)` being
 * its id `p:p+length` (for tumbling windows the slice is the window, so the layout is the window operator's). Timers,
 * as the window operator's: per key, at `e - 1` (fire) and `e - 1 + allowedLateness` (cleanup) in the namespace of
 * the window `[e - size, e)`, registered once per key and window rather than per record: when a slice of the key is
 * new (the first window holding it) and, when a window fires, for the next one if the key has slices in it. The
 * cleanup of a window drops the slices no later window holds. A window that a state written per window (before
 * slicing) still holds under its own id is merged with its slices, so such savepoints restore mid-window.
 *
 * While the operator keeps its index of held slices (`HeldSlices`), the firing timers are not kept as timers: the
 * index's sweep of window ends holds them (one entry per key, listed at each end it fires at) and the snapshot
 * writes them as the timers above, so a checkpoint reads the same either way and restores into either way. Cleanup
 * timers (with an allowed lateness) stay timers; those due before a window end fire before it.
 */
export function slicedWindowOperator<T, R>(
  input: WindowedFlow<T>,
  kind: string,
  uid: string | undefined,
  slicing: WindowSlicing<T>,
  userFunction: ProcessWindowFunction<unknown, R> | undefined,
  parallelism?: number,
): Flow<R> {
  const { assigner, allowedLateness } = input.window;
  const { size, slide, offset } = assigner.aligned!;
  const length = gcd(size, slide);
  // Slices shorter than the windows have ids of their own.
  const sliced = length !== size;
  return keyedOperate<T, R>(input, kind, uid, (backend, emit, task, fail) => {
    const record = task.record;
    // Windows hold state under their own ids only when restored from the layout before slices (this operator never
    // writes any): a job that restored nothing need not look for it at every firing.
    const perWindowState = sliced && task.restoredOperatorStates.length > 0;
    const state = backend.getState(slicing.descriptor);
    const timers = windowTimers(backend, task, fail, onTimer);
    const slices = new WindowCache(length);
    const windows = new WindowCache(size);
    // Which slices each key holds values in, its newest slice's records not yet in the state, and the window ends its
    // windows fire at: firing reads only those slices, records reach the state once per key and slice, and no timer
    // is kept per key and window. Only for sliding windows: tumbling ones, whose window is their one slice, ran at
    // 0.55 of plain RxJS with it against 0.74 with a timer per key and window (`windows/tumbling-weir-vs-rx`).
    let held: HeldSlices<T> | undefined = sliced ? new HeldSlices<T>(backend, state, slicing) : undefined;
    // The span of the key a timer or a late record fires windows for, looked up once for its reads and clears.
    let currentSpan: ReturnType<HeldSlices<T>['of']>;
    if (held && task.restoredOperatorStates.length > 0) {
      const restored = held;
      // The firing timers restored go to the sweep, which fires them from now on (cleanup timers stay timers).
      const firing: [number, string, Key][] = [];
      timers.forEachEventTimer((time, namespace, key) => {
        const window = windowOfId(namespace);
        const span = restored.cover(key, window.start, window.end - length);
        if (time === window.maxTimestamp) {
          restored.fireAt(span, window.end);
          firing.push([time, namespace, key]);
        }
      });
      for (const [time, namespace, key] of firing) timers.deleteEventTimeTimer(key, namespace, time);
    }
    // Firing from the sweep runs outside any record, as timers do: a throw fails the task.
    const guard = new UserFunctionGuard(fail);

    let currentKey: Key = '';
    let currentWindow: Window = windows.at(0);
    const { windowContext, out } = windowFunctionContext<R>(timers, emit, record, () => currentWindow);

    /** When the window ending at `end` is dropped for good: its last instant plus the allowed lateness. */
    const cleanupTime = (end: number) => Math.min(end - 1 + allowedLateness, Number.MAX_SAFE_INTEGER);

    // The ids of the slices of the window read last: timers fire key after key for one window.
    let idsWindow: Window | undefined;
    let idsOfWindow: string[] = [];
    function sliceIdsOf(window: Window): readonly string[] {
      if (window !== idsWindow) {
        idsOfWindow = [];
        for (let start = window.start; start < window.end; start += length) idsOfWindow.push(slices.at(start).id);
        idsWindow = window;
      }
      return idsOfWindow;
    }

    /**
     * The key's merged partial result of a window (undefined: nothing in it), leaving the slices' own values as they
     * are; `sharedSeen` tells whether a slice the next window shares held something.
     */
    let sharedSeen = false;
    // The slices from this index on are shared with the next window.
    const shared = slide / length;
    let merged: unknown;
    let copied = false;
    /** Merges a slice's value (or the key's pending records) into `merged`, which is copied before it is changed. */
    function mergeIn(value: unknown): void {
      if (merged === undefined) merged = value;
      else {
        if (!copied) {
          merged = copyValue(merged);
          copied = true;
        }
        merged = slicing.merge(merged, value);
      }
    }
    function contentsOf(window: Window): unknown {
      merged = undefined;
      copied = false;
      sharedSeen = false;
      const ids = sliceIdsOf(window);
      let from = 0;
      let to = ids.length - 1;
      // The slice whose records the span holds pending (-1: none), and whether the state has nothing else of it.
      let pendingAt = -1;
      let pendingAlone = false;
      const span = currentSpan;
      if (held) {
        if (span === undefined) to = -1;
        else {
          from = Math.max(from, (span.first - window.start) / length);
          to = Math.min(to, (span.last - window.start) / length);
          if (span.pending !== undefined) {
            pendingAt = (span.pendingStart - window.start) / length;
            pendingAlone = span.pendingAlone;
          }
        }
        held.saved += ids.length - Math.max(0, to - from + 1) + (pendingAlone && pendingAt >= from && pendingAt <= to ? 1 : 0);
      }
      for (let i = from; i <= to; i++) {
        let seen = false;
        if (!(i === pendingAt && pendingAlone)) {
          backend.setCurrentNamespace(ids[i]!);
          const value = state.get();
          if (value !== undefined) {
            mergeIn(value);
            seen = true;
          }
        }
        if (i === pendingAt) {
          mergeIn(span!.pending);
          seen = true;
        }
        if (seen && i >= shared) sharedSeen = true;
      }
      if (perWindowState) {
        backend.setCurrentNamespace(window.id);
        const value = state.get();
        if (value !== undefined) mergeIn(value);
      }
      return merged;
    }

    /** Emits the window's result for the current key; false when the key has nothing in it. */
    function fire(window: Window): boolean {
      const merged = contentsOf(window);
      if (merged === undefined) return false;
      const result = slicing.result(merged);
      if (result === undefined) return true;
      currentWindow = window;
      // Window results carry the window's last instant as their event timestamp.
      const previous = record.current;
      record.current = window.maxTimestamp;
      if (userFunction) userFunction.process(currentKey, windowContext, [result], out);
      else emit(result as R);
      record.current = previous;
      return true;
    }

    /** Drops the key's slices that no window after this one holds (and the window's own state of before). */
    function clearLast(window: Window): void {
      const drop = window.start + slide;
      let from = window.start;
      let to = drop - length;
      if (held) {
        const span = currentSpan;
        if (span === undefined) to = from - length;
        else {
          from = Math.max(from, span.first);
          to = Math.min(to, span.last);
        }
      }
      // A slice only pending was never written (dropBefore forgets it): there is nothing to clear.
      const unwritten = currentSpan?.pendingAlone ? currentSpan.pendingStart : Number.NaN;
      if (held && currentSpan !== undefined) held.dropBefore(currentKey, currentSpan, drop);
      for (let start = from; start <= to; start += length) {
        if (start === unwritten) continue;
        backend.setCurrentNamespace(slices.at(start).id);
        state.clear();
      }
      if (perWindowState) {
        backend.setCurrentNamespace(window.id);
        state.clear();
      }
    }

    /** A record in slice `start` that some window holding it has fired for already (within the allowed lateness). */
    function late(firstEnd: number, lastEnd: number, watermark: number): void {
      let pending: Window | undefined;
      // Latest window first, as the window operator visits a record's windows.
      for (let end = lastEnd; end >= firstEnd && cleanupTime(end) > watermark; end -= slide) {
        const window = windows.at(end - size);
        if (window.maxTimestamp > watermark) pending = window;
        else {
          fire(window);
          timers.registerEventTimeTimer(currentKey, window.id, cleanupTime(end));
        }
      }
      if (pending === undefined) return;
      if (currentSpan !== undefined) held!.fireAt(currentSpan, pending.end);
      else timers.registerEventTimeTimer(currentKey, pending.id, pending.maxTimestamp);
    }

    // Timers fire grouped by time and window, so consecutive ones mostly share the window: parse its id once.
    let timerNamespace: string | undefined;
    let timerWindow: Window = currentWindow;
    function onTimer(domain: TimeDomain, time: number, key: Key, namespace: string): void {
      if (domain !== 'event-time') return;
      flushRun();
      currentKey = key;
      currentSpan = held?.of(key);
      if (namespace !== timerNamespace) {
        timerWindow = windowOfId(namespace);
        timerNamespace = namespace;
      }
      onWindowTime(time, timerWindow);
    }

    /** Time `time` of the current key's window: its end (fire) or its cleanup, or both. */
    function onWindowTime(time: number, window: Window): void {
      filledKey = undefined;
      if (time === window.maxTimestamp && fire(window)) {
        if (allowedLateness > 0) timers.registerEventTimeTimer(currentKey, window.id, cleanupTime(window.end));
        // Slices are shared: the next window of the key may have no record of its own to make it fire (the slices
        // it does not share do when they get their first record).
        if (sharedSeen) {
          if (currentSpan !== undefined) held!.fireAt(currentSpan, window.end + slide);
          else {
            const next = windows.at(window.start + slide);
            timers.registerEventTimeTimer(currentKey, next.id, next.maxTimestamp);
          }
        }
      }
      if (time === cleanupTime(window.end)) clearLast(window);
      backend.setCurrentNamespace(VOID);
    }

    /** Fires the windows ending at the sweep's earliest end, key after key, as their timers would. */
    function fireSweptEnd(sweep: HeldSlices<T>['sweep']): void {
      const window = windows.at(sweep.next()! - size);
      sweep.fireNext((span) => {
        currentKey = span.key;
        currentSpan = span;
        backend.setCurrentKey(span.key);
        onWindowTime(window.maxTimestamp, window);
      });
    }

    /** The sweep's firings as the timers they stand for: `[e - 1, window id, key]` for each key and window end `e`. */
    function sweptTimers(visit: (time: number, namespace: string, key: Key) => void): void {
      held?.sweep.forEach((end, span) => visit(end - 1, windows.at(end - size).id, span.key));
    }

    /** Hands the sweep's firings back to timers (the held slices are dropped). */
    function sweepToTimers(): void {
      sweptTimers((time, namespace, key) => timers.registerEventTimeTimer(key, namespace, time));
    }

    // The slice of the record before, with the ends of its first and last windows and its id: consecutive records
    // mostly fall in the same slice, which then costs two comparisons instead of three divisions and a lookup.
    let sliceStart = Number.NaN;
    let sliceEnd = Number.NaN;
    let sliceId = VOID;
    let firstEnd = 0;
    let lastEnd = 0;
    let sliceCleanup = 0;
    // The key whose record went into that slice last: the slice holds something for it (only a timer clears a
    // slice, and timers forget this), so its window's timer is registered and the record need not look.
    let filledKey: Key | undefined;
    // The records of `filledKey` in that slice after its first, combined here (Flink's local pre-aggregation) and
    // added to the state as one when the run ends: a run of one key (a few keys, or windowAll's one key) then costs
    // `accumulate` per record instead of a state update. The first record of a run goes to the state itself, so
    // keys that alternate (many keys) pay one comparison for this. Anything reading the state adds the run first.
    let run: unknown;
    let inRun = false;
    let runKey: Key = '';
    let runId = VOID;
    /** Adds the combined records of the run to the state; leaves the backend in the void namespace. */
    function flushRun(): void {
      if (!inRun) return;
      inRun = false;
      const current = backend.getCurrentKey();
      backend.setCurrentKey(runKey);
      backend.setCurrentNamespace(runId);
      state.add(slicing.toAdd(run));
      run = undefined;
      backend.setCurrentNamespace(VOID);
      if (current !== undefined) backend.setCurrentKey(current);
    }
    // Records since the index was last weighed.
    let records = 0;

    return {
      onRecord(value) {
        currentKey = backend.getCurrentKey()!;
        const timestamp = record.current ?? task.scheduler.now();
        const watermark = timers.currentWatermark;
        if (!(timestamp >= sliceStart && timestamp < sliceEnd)) {
          sliceStart = windowStart(timestamp, offset, length);
          sliceEnd = sliceStart + length;
          sliceId = slices.at(sliceStart).id;
          // The windows holding the slice end every `slide` ms from the first end after it to the last one.
          lastEnd = windowStart(sliceStart, offset, slide) + size;
          firstEnd = lastEnd - slide * Math.floor((lastEnd - sliceStart - 1) / slide);
          sliceCleanup = cleanupTime(lastEnd);
          flushRun();
          filledKey = undefined;
        }
        if (sliceCleanup <= watermark) {
          emitControl(emit, new SideOutputElement(LATE_DATA, value, timestamp));
          return;
        }
        if (held && ++records === CHECK_EVERY) {
          records = 0;
          if (held.lookups > CHECK_AFTER && held.saved < held.lookups) {
            // Keys with one record per slice in every slice (short slices over many keys): the index saves nothing
            // and costs a lookup per record and firing. Everything it holds goes to the state, and it is dropped.
            held.flushAll();
            sweepToTimers();
            held = undefined;
            currentSpan = undefined;
          }
        }
        if (held) {
          const fresh = held.add(currentKey, sliceStart, sliceId, value);
          if (firstEnd - 1 > watermark) {
            if (fresh !== undefined) held.fireAt(fresh, firstEnd);
          } else {
            currentSpan = held.of(currentKey)!;
            late(firstEnd, lastEnd, watermark);
          }
          backend.setCurrentNamespace(VOID);
          return;
        }
        if (firstEnd - 1 > watermark && currentKey === filledKey) {
          run = slicing.accumulate(run, value);
          if (!inRun) {
            inRun = true;
            runKey = currentKey;
            runId = sliceId;
          }
          return;
        }
        flushRun();
        backend.setCurrentNamespace(sliceId);
        if (firstEnd - 1 > watermark) {
          const fresh = state.get() === undefined;
          state.add(value);
          filledKey = currentKey;
          if (fresh) {
            const first = windows.at(firstEnd - size);
            timers.registerEventTimeTimer(currentKey, first.id, first.maxTimestamp);
          }
        } else {
          state.add(value);
          late(firstEnd, lastEnd, watermark);
        }
        backend.setCurrentNamespace(VOID);
      },
      ...timerHandlers(timers),
      onWatermark(watermark, forward) {
        const time = watermark.timestamp;
        const sweep = held?.sweep;
        if (sweep !== undefined) {
          // Timers due before a window end fire before it, as one timer queue would order them.
          for (let end = sweep.next(); end !== undefined && end - 1 <= time; end = sweep.next()) {
            timers.advanceWatermark(time, end - 2);
            guard.attempt(() => fireSweptEnd(sweep));
          }
        }
        timers.advanceWatermark(time);
        forward();
      },
      snapshotOperatorState: () => ({ timers: timers.snapshot(sweptTimers) }),
      prepareSnapshot: () => {
        flushRun();
        held?.flushAll();
      },
    };
  }, { timestamped: true, parallelism });
}
