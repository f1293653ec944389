import type { Flow } from '../core/flow.js';
import type { KeySelector, TaskContext } from '../core/graph.js';
import type { AnyStateDescriptor, Json, KeyedStateBackend } from '../core/types.js';
import { savedTimers } from '../time/timerService.js';
import { keyedContext } from './keyedContext.js';
import { operateMulti, restoredStates } from './operateMulti.js';
import type { Output, ProcessContext, TimerContext } from './processFunction.js';

/** What a two-input process operator builds once its context exists (per attempt and instance). */
export interface CoProcessHandler<R> {
  /** A record from input 0 or 1, its key current on keyed inputs. */
  onRecord: (input: number, value: unknown) => void;
  /** A timer fired, its key current and the output stamped with `time`. */
  onTimer?(time: number, ctx: TimerContext, out: Output<R>): void;
  /** Operator state saved beside the timers at every barrier (broadcast state). */
  snapshotOperatorState?(): Record<string, Json>;
}

export interface CoProcessSpec<R> {
  kind: string;
  uid: string | undefined;
  /** The key selector of each input when both are keyed (or only the first, for broadcast). */
  keySelectors: (KeySelector<unknown> | undefined)[] | undefined;
  states: readonly AnyStateDescriptor[] | undefined;
  setup(parts: { task: TaskContext; ctx: ProcessContext; out: Output<R>; emit: (value: R) => void; backend: KeyedStateBackend | undefined }): CoProcessHandler<R>;
}

/**
 * The assembly `coProcess`, `processBroadcast` and `intervalJoin` share (as RxJS shares `scanInternals`): a
 * multi-input operator whose function gets a keyed context; its timers are restored from every instance's saved
 * state (rescaling), fired by the combined watermark, saved at every barrier and cancelled with the attempt.
 */
export function coProcessOperator<R>(inputs: Flow<unknown>[], spec: CoProcessSpec<R>): Flow<R> {
  return operateMulti<R>(inputs, {
    kind: spec.kind,
    uid: spec.uid,
    keySelectors: spec.keySelectors,
    states: spec.states,
    setup(task, emit, fail, backend) {
      // Set just below: the timer callback reads it only when a timer fires, after setup (with a watermark or later).
      let handler: CoProcessHandler<R>;
      const { ctx, out, service } = keyedContext<R>(task, emit, fail, backend, savedTimers(restoredStates(task)), (time) => handler.onTimer?.(time, ctx as TimerContext, out), spec.kind);
      handler = spec.setup({ task, ctx, out, emit, backend });
      return {
        onRecord: handler.onRecord,
        onWatermark: (timestamp) => service?.advanceWatermark(timestamp),
        snapshotOperatorState: () => {
          const own = handler.snapshotOperatorState?.();
          return service ? { timers: service.snapshot(), ...own } : (own ?? null);
        },
        dispose: () => service?.dispose(),
      };
    },
  });
}
