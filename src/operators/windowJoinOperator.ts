import { SideOutputElement, emitControl } from '../core/elements.js';
import type { Flow } from '../core/flow.js';
import type { Key } from '../core/types.js';
import { UserFunctionGuard } from '../core/userFunctionFailure.js';
import { listState } from '../state/descriptors.js';
import { LATE_DATA } from '../windows/lateData.js';
import { WindowCache, gcd, windowOfId, windowStart } from '../windows/timeWindow.js';
import { timerHandlers, windowTimers } from '../windows/windowTimers.js';
import type { WindowedFlow, WindowSpec } from '../windows/windowedFlow.js';
import type { Window } from '../windows/windowTypes.js';
import { keyedOperate } from './keyedOperate.js';

/** A record of either side of a join, tagged with its input (0: left, 1: right), as the join's window state holds it. */
export type Tagged<A, B> = { side: 0; value: A } | { side: 1; value: B };

/**
 * One key's records in one window: those since the last snapshot in memory, by side (firing then pairs them without
 * sorting them out), the older ones in the window state. The lists hold the records themselves, not the tagged
 * elements that carried them here: those die young, where kept they would be copied by every scavenge until the
 * window fires (a snapshot tags them again). A side without records has no list: most keys of a window
 * have records on one side only (a person who opened no auction), and these lists live until the window fires, so
 * each one allocated empty (and grown to 17 slots by its first push) was most of what a join kept and its
 * scavenges copied.
 */
interface WindowOfKey {
  readonly key: Key;
  lefts: unknown[] | null;
  rights: unknown[] | null;
  /** The window state holds records of this key and window too (written by a snapshot, or restored). */
  inState: boolean;
}

const VOID = '';
/** A side without records (never written to). */
const NONE: readonly unknown[] = [];

/** The records of one side among a window's saved elements. */
function valuesOf(saved: readonly Tagged<unknown, unknown>[], side: 0 | 1): unknown[] {
  const values: unknown[] = [];
  for (const element of saved) if (element.side === side) values.push(element.value);
  return values;
}

/** One side's records tagged again, as the window state holds them. */
function tagged(values: readonly unknown[] | null, side: 0 | 1): Tagged<unknown, unknown>[] {
  return values === null ? [] : values.map((value) => ({ side, value }));
}

/** Whether a window join can run as `windowJoinOperator`: windows that only fire at their end, dropped then. */
export function joinsAtWindowEnd({ assigner, defaultTrigger, allowedLateness }: WindowSpec): boolean {
  return assigner.time === 'event-time' && assigner.aligned !== undefined && !assigner.merging && assigner.evictToLast === undefined && defaultTrigger && allowedLateness === 0;
}

/**
 * The window operator of a window join whose windows fire once, at their end, and are dropped then (event time,
 * tumbling or sliding windows, the default trigger, no allowed lateness): what the window operator with a
 * ProcessWindowFunction pairing the sides computes, without what that generality costs per record (a trigger call,
 * a timer lookup, a state write) and per firing (the trigger again, a timer deletion, a copy of the contents).
 *
 * Each key's records of a window stay in memory, listed under the window's end in the order the key first had a
 * record there, until a watermark reaches the window's last instant: the keys' windows then fire in that order (as
 * their timers would) and are forgotten. A record for a window already fired goes to the late-data side output.
 *
 * State, as the window operator's, so that checkpoints of either restore into the other: the records of a key and
 * window, tagged, in the list state `window-contents` under the window's id (written from memory before each
 * snapshot, Flink's prepareSnapshotPreBarrier), and a timer at the window's last instant per key and window (the
 * windows in memory saved as such timers). Restored timers become windows in memory whose records are in the state.
 */
export function windowJoinOperator<A, B, R>(
  input: WindowedFlow<Tagged<A, B>>,
  apply: (left: A, right: B) => R,
  uid: string | undefined,
): Flow<R> {
  const { size, slide, offset } = input.window.assigner.aligned!;
  // Time cut into pieces that each lie in the same windows (as the sliced window operator's slices).
  const length = gcd(size, slide);
  return keyedOperate<Tagged<A, B>, R>(
    input,
    'process',
    uid,
    (backend, emit, task, fail) => {
      const record = task.record;
      const contents = backend.getState(listState<Tagged<unknown, unknown>>('window-contents'));
      const timers = windowTimers(backend, task, fail, onTimer);
      const windows = new WindowCache(size);
      // The keys with records in each open window, by the window's end; the ends ascending (few: the windows open
      // at once).
      const open = new Map<number, Map<Key, WindowOfKey>>();
      const ends: number[] = [];
      // Firing runs outside any record, as timers do: a throw fails the task.
      const guard = new UserFunctionGuard(fail);

      // The piece of time of the record before and the ends of its windows: consecutive records mostly fall in the
      // same piece, which then costs two comparisons instead of divisions and a map lookup per window.
      let recentStart = Number.NaN;
      let recentEnd = Number.NaN;
      let firstEnd = 0;
      let lastEnd = 0;
      let recentKeys: Map<Key, WindowOfKey> | undefined;

      function keysEndingAt(end: number): Map<Key, WindowOfKey> {
        let keys = open.get(end);
        if (keys === undefined) {
          open.set(end, (keys = new Map<Key, WindowOfKey>()));
          let i = ends.length;
          while (i > 0 && ends[i - 1]! > end) i--;
          ends.splice(i, 0, end);
        }
        return keys;
      }

      // The window's own timers (at its last instant) restored become windows in memory; any other timer of a window
      // (a cleanup timer of a job with an allowed lateness) stays a timer and drops the window's state when due.
      const restored: [number, string, Key][] = [];
      timers.forEachEventTimer((time, namespace, key) => {
        const window = windowOfId(namespace);
        if (time !== window.maxTimestamp) return;
        const keys = keysEndingAt(window.end);
        if (!keys.has(key)) keys.set(key, { key, lefts: null, rights: null, inState: true });
        restored.push([time, namespace, key]);
      });
      for (const [time, namespace, key] of restored) timers.deleteEventTimeTimer(key, namespace, time);

      function onTimer(_domain: unknown, _time: number, _key: Key, namespace: string): void {
        backend.setCurrentNamespace(namespace);
        contents.clear();
        backend.setCurrentNamespace(VOID);
      }

      /** Emits the pairs of one key's window, each stamped with the window's last instant, left by left. */
      function fire(window: Window, of: WindowOfKey): void {
        let lefts = of.lefts ?? NONE;
        let rights = of.rights ?? NONE;
        if (of.inState) {
          backend.setCurrentKey(of.key);
          backend.setCurrentNamespace(window.id);
          const saved = contents.get();
          contents.clear();
          backend.setCurrentNamespace(VOID);
          lefts = valuesOf(saved, 0).concat(lefts);
          rights = valuesOf(saved, 1).concat(rights);
        }
        if (lefts.length === 0 || rights.length === 0) return;
        const previous = record.current;
        record.current = window.maxTimestamp;
        for (let i = 0; i < lefts.length; i++) {
          const left = lefts[i] as A;
          for (let j = 0; j < rights.length; j++) emit(apply(left, rights[j] as B));
        }
        record.current = previous;
      }

      /** Fires and forgets every window ending at the earliest end. */
      function fireEarliest(): void {
        const end = ends.shift()!;
        const keys = open.get(end)!;
        open.delete(end);
        recentEnd = Number.NaN;
        const window = windows.at(end - size);
        for (const of of keys.values()) fire(window, of);
      }

      /** Writes what the open windows hold in memory to the window state (a snapshot reads only the state). */
      function flush(): void {
        for (const [end, keys] of open) {
          const id = windows.at(end - size).id;
          for (const of of keys.values()) {
            if (of.lefts === null && of.rights === null) continue;
            backend.setCurrentKey(of.key);
            backend.setCurrentNamespace(id);
            // By side rather than in arrival order: a firing pairs each side's records in their own order only.
            contents.addAll(tagged(of.lefts, 0).concat(tagged(of.rights, 1)));
            of.lefts = null;
            of.rights = null;
            of.inState = true;
          }
        }
        backend.setCurrentNamespace(VOID);
      }

      return {
        onRecord(value) {
          const key = backend.getCurrentKey()!;
          const timestamp = record.current ?? task.scheduler.now();
          if (!(timestamp >= recentStart && timestamp < recentEnd)) {
            // The windows holding the piece end every `slide` ms from `firstEnd` to `lastEnd` (one when they tumble).
            recentStart = windowStart(timestamp, offset, length);
            recentEnd = recentStart + length;
            lastEnd = windowStart(recentStart, offset, slide) + size;
            firstEnd = lastEnd - slide * Math.floor((lastEnd - recentStart - 1) / slide);
            recentKeys = undefined;
          }
          const watermark = timers.currentWatermark;
          if (lastEnd - 1 <= watermark) {
            emitControl(emit, new SideOutputElement(LATE_DATA, value, timestamp));
            return;
          }
          const { side, value: carried } = value;
          for (let end = firstEnd; end <= lastEnd; end += slide) {
            // A window that fired already takes no more records; the later ones still do.
            if (end - 1 <= watermark) continue;
            const keys = end === lastEnd ? (recentKeys ??= keysEndingAt(end)) : keysEndingAt(end);
            const of = keys.get(key);
            if (of === undefined) {
              // Lists made with their first record: exactly one slot, where a push onto an empty list allocates 17.
              keys.set(key, side === 0 ? { key, lefts: [carried], rights: null, inState: false } : { key, lefts: null, rights: [carried], inState: false });
            } else if (side === 0) {
              if (of.lefts === null) of.lefts = [carried];
              else of.lefts.push(carried);
            } else if (of.rights === null) of.rights = [carried];
            else of.rights.push(carried);
          }
        },
        ...timerHandlers(timers),
        onWatermark(watermark, forward) {
          const time = watermark.timestamp;
          // Timers due before a window end fire before it, as one timer queue would order them.
          for (let end = ends[0]; end !== undefined && end - 1 <= time; end = ends[0]) {
            timers.advanceWatermark(time, end - 2);
            guard.attempt(fireEarliest);
          }
          timers.advanceWatermark(time);
          forward();
        },
        prepareSnapshot: flush,
        snapshotOperatorState: () => ({
          timers: timers.snapshot((visit) => {
            for (const [end, keys] of open) {
              const window = windows.at(end - size);
              for (const key of keys.keys()) visit(window.maxTimestamp, window.id, key);
            }
          }),
        }),
      };
    },
    { timestamped: true },
  );
}
