import { CheckpointBarrier, ControlElement, SideOutputElement, Watermark, type StreamElement } from '../../core/elements.js';
import { AsyncTimeoutError } from '../../core/errors.js';
import type { KeySelector, TaskContext } from '../../core/graph.js';
import { instanceOfKey } from '../../core/keyGroups.js';
import type { Key } from '../../core/types.js';
import { UserFunctionGuard } from '../../core/userFunctionFailure.js';
import { checkKey } from '../../state/keyCodec.js';
import { endOnce, subscribeTo, type DirectObserver } from '../../task/directObservable.js';
import type { Observable } from 'rxjs';
import { AsyncCall, type AsyncCallSite } from './asyncCall.js';
import { AsyncQueue } from './asyncQueue.js';
import type { AsyncSettings } from './mapAsyncOptions.js';
import { restoredInputs, saveInputs } from './savedInputs.js';

/** What a mapAsync node runs: the user's function and settings, and the key selector when the flow is keyed. */
export interface MapAsyncSpec<T, R> {
  readonly fn: (value: T, signal: AbortSignal) => Promise<R> | R;
  readonly settings: AsyncSettings<T, R>;
  readonly selectKey: KeySelector<T> | undefined;
  readonly parallelism: number;
}

interface Instance<T, R> {
  readonly subtask: TaskContext;
  readonly queue: AsyncQueue<T, R>;
  /** Watermarks this instance has reached (the operator sends one on once every instance has). */
  reached: number;
}

/**
 * One attempt of a mapAsync node (Flink's AsyncWaitOperator): one queue per instance (each owning a range of key
 * groups on a keyed flow), fed by the input and emptied as calls complete. A barrier goes on at once, and each
 * instance saves the records still in its queue; a restore issues them again before the sources start. Watermarks
 * and the end of input are held until the records before them are out, and the final barrier until every call has
 * completed, so that the final checkpoint commits every result.
 */
export function runMapAsync<T, R>(
  task: TaskContext,
  upstream: Observable<StreamElement<unknown>>,
  observer: DirectObserver<StreamElement<unknown>>,
  { fn, settings, selectKey, parallelism }: MapAsyncSpec<T, R>,
): () => void {
  const out = endOnce(observer);
  const guard = UserFunctionGuard.of({ job: task.job, uid: task.uid, operator: 'mapAsync' }, (error) => out.error(error));
  const record = task.record;
  /** Watermarks taken in that some instance has not passed on yet, oldest first. */
  const watermarks: Watermark[] = [];
  let forwarded = 0;
  let received = 0;
  let finalBarrier: CheckpointBarrier | undefined;
  let inputEnded = false;
  // The signal of calls without a timeout: aborted when the attempt ends.
  const attempt = new AbortController();
  const passOnWatermarks = () => {
    let reached = received;
    for (const instance of instances) reached = Math.min(reached, instance.reached);
    if (forwarded === reached) return;
    while (forwarded < reached) {
      const watermark = watermarks.shift()!;
      forwarded++;
      task.watermark.current = watermark.timestamp;
      out.next(watermark);
    }
    for (const { queue } of instances) queue.resume();
  };
  const forwardedWatermarks = () => forwarded;
  const snapshot = (barrier: CheckpointBarrier) =>
    instances.forEach(({ subtask, queue }, index) =>
      subtask.snapshot(
        barrier,
        () => ({ operator: saveInputs(queue.pending()) }),
        // One barrier goes on, after the last instance captured its queue.
        index === instances.length - 1 ? () => out.next(barrier) : () => undefined,
      ),
    );
  const finishIfDrained = () => {
    if (out.closed || !(finalBarrier !== undefined || inputEnded) || instances.some(({ queue }) => queue.size > 0)) return;
    if (finalBarrier !== undefined) {
      const barrier = finalBarrier;
      finalBarrier = undefined;
      snapshot(barrier);
    }
    if (inputEnded) out.complete();
  };
  const instances: Instance<T, R>[] = Array.from({ length: parallelism }, (_, index) => {
    const subtask = parallelism === 1 ? task : task.subtask(index);
    const site: AsyncCallSite<T, R> = {
      fn,
      settings,
      scheduler: task.scheduler,
      signal: attempt.signal,
      fail: guard.fail,
      timedOut: (position) =>
        new AsyncTimeoutError(
          `mapAsync '${task.uid}' of job '${task.job}': record ${position} of instance ${index} in this attempt got no result within ${settings.timeout} ms; ` +
            'give onTimeout a fallback result, or raise timeout',
        ),
    };
    const instance: Instance<T, R> = {
      subtask,
      reached: 0,
      queue: new AsyncQueue<T, R>(settings.ordered, settings.capacity, {
        start: (entry, done) => new AsyncCall(site, entry.value, entry.position, done),
        emit: (entry) => {
          record.current = entry.timestamp;
          out.next(entry.result);
        },
        watermark: () => {
          instance.reached++;
          passOnWatermarks();
        },
        forwarded: forwardedWatermarks,
        raise: () => task.backpressure.raise(),
        drained: finishIfDrained,
      }),
    };
    return instance;
  });
  // The instance of each key, computed once per distinct key: hashing costs about as much as the rest of a record's work.
  const route = new Map<Key, Instance<T, R>>();
  const instanceOf = (value: T): Instance<T, R> => {
    if (selectKey === undefined || parallelism === 1) return instances[0]!;
    const key = selectKey(value);
    let instance = route.get(key);
    if (instance === undefined) {
      if (typeof key !== 'string') checkKey(key, task.uid);
      instance = instances[instanceOfKey(key, parallelism, task.maxParallelism)]!;
      route.set(key, instance);
    }
    return instance;
  };
  const onElement = (element: StreamElement<unknown>) => {
    if (!(element instanceof ControlElement)) return instanceOf(element as T).queue.add(element as T, record.current);
    if (element instanceof Watermark) {
      watermarks.push(element);
      received++;
      for (const { queue } of instances) queue.addWatermark(element);
    } else if (element instanceof CheckpointBarrier) {
      if (!element.final) return snapshot(element);
      finalBarrier = element;
      finishIfDrained();
    } else if (!(element instanceof SideOutputElement)) out.next(element);
  };
  // Records saved by the checkpoint restored go first, each to the instance owning its key now (any parallelism then).
  const saved = restoredInputs(task.restoredOperatorStates);
  if (saved.length > 0) {
    task.beforeSources(() => {
      for (const { value, timestamp } of saved) guard.attempt(() => instanceOf(value as T).queue.add(value as T, timestamp));
    });
  }
  const stop = subscribeTo(upstream, {
    next(element) {
      if (!out.closed) guard.call(onElement, element);
    },
    dropsAfterEnd: true,
    error: (error) => out.error(error),
    complete: () => {
      if (out.closed) return;
      inputEnded = true;
      finishIfDrained();
    },
  });
  return () => {
    out.closed = true;
    stop();
    instances.forEach(({ queue }) => queue.dispose());
    attempt.abort();
  };
}
