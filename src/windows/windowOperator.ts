import type { ListState, Key, KeyedStateBackend, ValueState } from '../core/types.js';
import { Flow } from '../core/flow.js';
import { SideOutputElement, emitControl } from '../core/elements.js';
import { keyedOperate } from '../operators/keyedOperate.js';
import { listState, valueState } from '../state/descriptors.js';
import { jsonSerializer } from '../state/serializers.js';
import type { TimeDomain, TimerService } from '../time/timerService.js';
import { windowFunctionContext } from './windowFunctionContext.js';
import { timerHandlers, windowTimers } from './windowTimers.js';
import { LATE_DATA } from './lateData.js';
import { slicedWindowOperator, slicesPay } from './slicedWindowOperator.js';
import { timeWindow, windowOfId } from './timeWindow.js';
import type { ProcessWindowFunction, WindowContents } from './windowFunction.js';
import type { WindowedFlow } from './windowedFlow.js';
import type { TriggerContext, TriggerResult, TriggerState, Window } from './windowTypes.js';

export { LATE_DATA };

const VOID = '';

/**
 * Flink's WindowOperator: assigns each record to windows, keeps their contents in keyed state scoped to the window
 * (the state namespace), asks the trigger when to fire, emits results stamped `window.maxTimestamp`, routes records
 * too late for any window to the late-data side output, and clears a window's state and timers at
 * `maxTimestamp + allowedLateness`. Session windows merge here, contents and trigger state included.
 */
export function windowOperator<T, R>(
  input: WindowedFlow<T>,
  kind: string,
  uid: string | undefined,
  contents: WindowContents<T>,
  userFunction: ProcessWindowFunction<unknown, R> | undefined,
  parallelism?: number,
): Flow<R> {
  const { assigner, trigger, allowedLateness } = input.window;
  const evictToLast = assigner.evictToLast;
  const eventTime = assigner.time === 'event-time';
  // Slices need partial results that merge and firing at the window's end only; anything else keeps each window.
  if (contents.slicing && assigner.aligned && eventTime && input.window.defaultTrigger && evictToLast === undefined && !assigner.merging && slicesPay(assigner.aligned)) {
    return slicedWindowOperator<T, R>(input, kind, uid, contents.slicing, userFunction, parallelism);
  }
  const flow = keyedOperate<T, R>(input, kind, uid, (backend, emit, task, fail) => {
    const record = task.record;
    const listed = listState<T>('window-contents');
    const incremental = evictToLast === undefined ? contents.incremental?.descriptor : undefined;
    const aggregated = incremental ? backend.getState(incremental) : undefined;
    const elements: ListState<T> | undefined = aggregated ? undefined : backend.getState(listed);
    // The windows of each key that are sessions in progress, for merging (void namespace).
    const sessions: ValueState<[number, number][]> | undefined = assigner.merging
      ? backend.getState(valueState<[number, number][]>('window-sessions', { serializer: jsonSerializer() }))
      : undefined;

    const timers = windowTimers(backend, task, fail, onTimer);

    let currentKey: Key = '';
    let currentWindow: Window = timeWindow(0, 1);
    const triggerContext = createTriggerContext(backend, timers, () => currentKey, () => currentWindow);
    const { windowContext, out } = windowFunctionContext<R>(timers, emit, record, () => currentWindow);

    /** The time at which a window's state is dropped for good: its end plus the allowed lateness, without overflow. */
    const cleanupTime = (window: Window) =>
      eventTime ? Math.min(window.maxTimestamp + allowedLateness, Number.MAX_SAFE_INTEGER) : window.maxTimestamp;
    const isLate = (window: Window) => eventTime && cleanupTime(window) <= timers.currentWatermark;

    function setWindow(window: Window): void {
      currentWindow = window;
      backend.setCurrentNamespace(window.id);
    }

    function addToWindow(value: T): void {
      if (aggregated) {
        aggregated.add(value);
        return;
      }
      elements!.add(value);
      if (evictToLast !== undefined) {
        const all = elements!.get();
        if (all.length > evictToLast) elements!.update(all.slice(all.length - evictToLast));
      }
    }

    function fire(window: Window): void {
      let results: unknown[];
      if (aggregated) {
        const result = aggregated.get();
        results = result === undefined ? [] : [result];
      } else {
        const all = elements!.get();
        results = all.length === 0 ? [] : contents.fromElements(all);
      }
      if (results.length === 0) return;
      // Window results carry the window's last instant as their event timestamp.
      const previous = record.current;
      record.current = window.maxTimestamp;
      if (userFunction) userFunction.process(currentKey, windowContext, results, out);
      else for (const result of results) emit(result as R);
      record.current = previous;
    }

    function purge(): void {
      aggregated?.clear();
      elements?.clear();
    }

    function act(result: TriggerResult, window: Window): void {
      if (result === 'fire' || result === 'fire-and-purge') fire(window);
      if (result === 'purge' || result === 'fire-and-purge') purge();
    }

    // The default time triggers register a timer at the window's end for each element, which is the cleanup timer
    // too when nothing outlives the end (processing time, or no allowed lateness): registering it again per record
    // and window would only cost timer-queue lookups.
    const cleanupIsTriggerTimer = input.window.defaultTrigger && assigner.time !== undefined && (!eventTime || allowedLateness === 0);
    function registerCleanup(window: Window): void {
      if (cleanupIsTriggerTimer || window.maxTimestamp >= Number.MAX_SAFE_INTEGER) return;
      if (eventTime) timers.registerEventTimeTimer(currentKey, window.id, cleanupTime(window));
      else timers.registerProcessingTimeTimer(currentKey, window.id, cleanupTime(window));
    }

    function clearWindow(window: Window): void {
      purge();
      trigger.clear(window, triggerContext);
      if (sessions) {
        backend.setCurrentNamespace(VOID);
        const remaining = (sessions.value() ?? []).filter(([start, end]) => start !== window.start || end !== window.end);
        sessions.update(remaining.length > 0 ? remaining : undefined);
        backend.setCurrentNamespace(window.id);
      }
    }

    /** Merges the new session window into the key's overlapping ones; returns the window the record goes to. */
    function mergeSession(window: Window): Window {
      backend.setCurrentNamespace(VOID);
      const all = sessions!.value() ?? [];
      const overlapping = all.filter(([start, end]) => start <= window.end && window.start <= end);
      if (overlapping.length === 0) {
        // A session late on arrival is not kept (Flink retires it): it would never be cleaned up, and a later record
        // touching it would merge into it and start its session too early.
        if (!isLate(window)) {
          all.push([window.start, window.end]);
          sessions!.update(all);
        }
        return window;
      }
      const start = Math.min(window.start, ...overlapping.map(([s]) => s));
      const end = Math.max(window.end, ...overlapping.map(([, e]) => e));
      const merged = timeWindow(start, end);
      const replaced = overlapping.map(([s, e]) => timeWindow(s, e)).filter((w) => w.id !== merged.id);
      sessions!.update([...all.filter((w) => !overlapping.includes(w)), [start, end]]);
      if (replaced.length > 0) {
        backend.mergeNamespaces(aggregated ? incremental! : listed, merged.id, replaced.map((w) => w.id));
        setWindow(merged);
        trigger.onMerge?.(merged, replaced, triggerContext);
        for (const old of replaced) {
          currentWindow = old;
          trigger.clear(old, triggerContext);
          if (eventTime) timers.deleteEventTimeTimer(currentKey, old.id, cleanupTime(old));
          else timers.deleteProcessingTimeTimer(currentKey, old.id, cleanupTime(old));
        }
      }
      return merged;
    }

    // Timers fire grouped by time and window, so consecutive ones mostly share the window: parse its id once.
    let timerNamespace: string | undefined;
    let timerWindow: Window = currentWindow;
    function onTimer(domain: TimeDomain, time: number, key: Key, namespace: string): void {
      currentKey = key;
      if (namespace !== timerNamespace) {
        timerWindow = windowOfId(namespace);
        timerNamespace = namespace;
      }
      const window = timerWindow;
      setWindow(window);
      const result = domain === 'event-time' ? trigger.onEventTime(time, window, triggerContext) : trigger.onProcessingTime(time, window, triggerContext);
      act(result, window);
      if ((domain === 'event-time') === eventTime && time === cleanupTime(window)) clearWindow(window);
      backend.setCurrentNamespace(VOID);
    }

    return {
      onRecord(value) {
        currentKey = backend.getCurrentKey()!;
        const timestamp = assigner.time === 'processing-time' ? task.scheduler.now() : (record.current ?? task.scheduler.now());
        let dropped = true;
        // An indexed loop: for…of allocates an iterator (and its results) per record here.
        const assigned = assigner.assign(timestamp);
        for (let i = 0; i < assigned.length; i++) {
          let window = assigned[i]!;
          if (sessions) window = mergeSession(window);
          if (isLate(window)) continue;
          dropped = false;
          setWindow(window);
          addToWindow(value);
          act(trigger.onElement(timestamp, window, triggerContext), window);
          registerCleanup(window);
        }
        backend.setCurrentNamespace(VOID);
        if (dropped && eventTime && timestamp + allowedLateness <= timers.currentWatermark) {
          emitControl(emit, new SideOutputElement(LATE_DATA, value, timestamp));
        }
      },
      ...timerHandlers(timers),
    };
  }, { timestamped: true, parallelism });
  return flow;
}

/** One trigger context per operator instance, reading the current key and window (no allocation per record). */
function createTriggerContext(
  backend: KeyedStateBackend,
  timers: TimerService,
  key: () => Key,
  window: () => Window,
): TriggerContext {
  const descriptors = new Map<string, ReturnType<typeof valueState<unknown>>>();
  return {
    get key() {
      return key();
    },
    get currentWatermark() {
      return timers.currentWatermark;
    },
    currentProcessingTime: () => timers.currentProcessingTime(),
    registerEventTimeTimer: (time) => timers.registerEventTimeTimer(key(), window().id, time),
    registerProcessingTimeTimer: (time) => timers.registerProcessingTimeTimer(key(), window().id, time),
    deleteEventTimeTimer: (time) => timers.deleteEventTimeTimer(key(), window().id, time),
    deleteProcessingTimeTimer: (time) => timers.deleteProcessingTimeTimer(key(), window().id, time),
    state<T>(name: string, of?: Window): TriggerState<T> {
      let descriptor = descriptors.get(name);
      if (descriptor === undefined) descriptors.set(name, (descriptor = valueState<unknown>(`trigger-${name}`)));
      const state = backend.getState(descriptor) as ValueState<T>;
      const scoped = <V>(read: () => V): V => {
        const current = window().id;
        backend.setCurrentNamespace((of ?? window()).id);
        try {
          return read();
        } finally {
          backend.setCurrentNamespace(current);
        }
      };
      return { get: () => scoped(() => state.value()), set: (value) => scoped(() => state.update(value)) };
    },
  };
}
