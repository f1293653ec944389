import { Observable, Subject, VirtualTimeScheduler } from 'rxjs';
import type { CheckpointStats } from '../checkpoint/checkpointStats.js';
import { completedCheckpointIds } from '../checkpoint/loadCheckpoint.js';
import { CancelCheckpointMarker, CheckpointBarrier, ControlElement, Watermark, type RecordTimestamp, type StreamElement } from '../core/elements.js';
import { JobDefinitionError, UserFunctionError, WeirError } from '../core/errors.js';
import { Execution } from '../runtime/execution.js';
import { Flow } from '../core/flow.js';
import type { GraphNode } from '../core/graph.js';
import { JobGraph } from '../core/jobGraph.js';
import { DEFAULT_MAX_PARALLELISM, keyGroupOf } from '../core/keyGroups.js';
import type { Key, StateDescriptor } from '../core/types.js';
import { flushPendingWrites } from '../operators/keyedOperate.js';
import type { OutputTag } from '../operators/sideOutput.js';
import { sinkTo } from '../sinks/sinkTo.js';
import { heapStateBackend } from '../state/heap/heapStateBackend.js';
import { memoryCheckpointStorage } from '../storage/memoryCheckpointStorage.js';
import { LATE_DATA } from '../windows/windowOperator.js';
import type { Window } from '../windows/windowTypes.js';
import { advanceClock, harnessClock } from './harnessClock.js';
import { HarnessCoordinator } from './harnessCoordinator.js';
import { HarnessInputError } from './harnessErrors.js';
import type { Fragment, HarnessOptions, HeldRecord } from './harnessOptions.js';
import { driveInputs } from './driveInputs.js';
import { HarnessOutput } from './harnessOutput.js';
import { checkSnapshotFits, readSnapshot, writeAndLoadSnapshot, type HarnessSnapshot } from './harnessSnapshot.js';
import { HeldRecords } from './heldRecords.js';
import { peekRecordedState, recordingStateBackend, type RecordedBackend } from './recordingStateBackend.js';
import { StreamRecord, type OutputElement } from './streamRecord.js';

const JOB = 'harness';
const OUTPUT_UID = 'harness-output';

/**
 * Builds a harness for a pipeline fragment and opens it: the fragment's operators run as in a job (same state
 * backends, serializers, checkpoint coordinator and file format), fed by inputs that the test drives step by step.
 * Every push is processed to completion before it returns.
 * @example
 * const h = await harness((input) => input.pipe(keyBy((e: Ev) => e.k), window(tumbling(3000)), reduce(sum, { uid: 'sum' })));
 * h.push(ev('a', 1), 1000);
 * h.push(ev('a', 2), 2000);
 * h.pushWatermark(2999);
 * expect(h.output()).toEqual([record(ev('a', 3), 2999)]);
 * const restored = await h.restore(await h.snapshot());
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- lets `input => input.pipe(keyBy((e: Ev) => …))` type-check without annotating input
export async function harness<I = any, R = unknown>(fragment: Fragment<I, R>, options: HarnessOptions = {}): Promise<Harness<I, R>> {
  const opened = new Harness<I, R>(fragment, options);
  await opened.open();
  return opened;
}

/** A running pipeline fragment driven by a test. Create it with `harness()`. */
export class Harness<I, R> {
  readonly inputCount: number;
  readonly scheduler: VirtualTimeScheduler;
  private readonly maxParallelism: number;
  private readonly timestamped: boolean;
  private readonly storage = memoryCheckpointStorage();
  private readonly coordinator: HarnessCoordinator;
  private readonly graph: JobGraph;
  private readonly subjects: Subject<StreamElement<unknown>>[] = [];
  private readonly record: { slot: RecordTimestamp | undefined } = { slot: undefined };
  private readonly backends: RecordedBackend[] = [];
  private readonly emitted = new HarnessOutput<R>();
  private readonly watermarks: number[];
  private readonly ended: boolean[];
  /** Checkpoints started, by id: their barrier, the inputs it was pushed to, and their completion. */
  private readonly checkpoints = new Map<number, { barrier: CheckpointBarrier; pushedTo: Set<number>; cancelled: boolean; done: Promise<unknown> }>();
  private readonly completed: HarnessSnapshot[] = [];
  /** Where the barrier the coordinator is injecting goes: every input (`snapshot()`), or one (`pushBarrier`). */
  private injectTo: number | 'all' = 'all';
  /** At a multi-input operator: the records its alignment holds. */
  private readonly heldRecords: HeldRecords | undefined;
  private execution: Execution | undefined;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly fragment: Fragment<I, R>,
    private readonly options: HarnessOptions,
  ) {
    const inputs = options.inputs ?? Math.max(1, fragment.length);
    if (!(Number.isInteger(inputs) && inputs >= 1)) throw new JobDefinitionError(`harness: inputs must be an integer ≥ 1, got ${inputs}`);
    this.inputCount = inputs;
    this.maxParallelism = options.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    this.timestamped = options.timestamped ?? true;
    this.scheduler = options.scheduler ?? harnessClock(options.startTime ?? options.restore?.timestamp ?? 0);
    if (options.scheduler && options.startTime !== undefined) advanceClock(options.scheduler, options.startTime);
    this.watermarks = new Array<number>(inputs).fill(Number.NEGATIVE_INFINITY);
    this.ended = new Array<boolean>(inputs).fill(false);
    this.graph = new JobGraph(JOB, options.parallelism ?? 1);
    const flows = Array.from({ length: inputs }, (_, index) => this.input(index));
    const out = fragment(flows[0] as Flow<I>, ...flows.slice(1));
    if (!(out instanceof Flow)) throw new JobDefinitionError('harness: the fragment must return the flow to observe (end it before any sink)');
    const capture = this.graph.add({ kind: 'harness-capture', uid: 'harness-capture', role: 'operator', stateful: false, inputs: [out.node], build: (_task, [up]) => this.capture(up!) });
    sinkTo({ name: 'harness', open: () => ({ write: () => undefined, finish: () => undefined, abort: () => undefined }) }, { uid: OUTPUT_UID })(new Flow(this.graph, capture));
    this.graph.freeze();
    const storage = options.maxStateSize === undefined ? this.storage : { ...this.storage, maxStateSize: options.maxStateSize };
    this.coordinator = new HarnessCoordinator(JOB, storage, this.scheduler, this.maxParallelism, options.checkpointTimeout ?? 600_000, {
      barrier: (barrier) => this.injectBarrier(barrier),
      // A failed harness aborts its checkpoints on the way down; nothing reads its inputs any more.
      cancel: (id) => (this.failure ? undefined : this.inputs().forEach((input) => this.deliver(input, new CancelCheckpointMarker(id)))),
    });
    this.heldRecords = inputs > 1 ? new HeldRecords(inputs, options.mode ?? 'exactly-once', this.scheduler, options.alignedTimeout) : undefined;
  }

  /** Builds the fragment's runtime (restoring the snapshot, if any); `harness()` calls it. */
  async open(): Promise<void> {
    const { restore, allowNonRestoredState = false, stateBackend = heapStateBackend(), mode = 'exactly-once', alignedTimeout } = this.options;
    const restored = restore ? await writeAndLoadSnapshot(this.storage, JOB, restore) : undefined;
    if (restored) {
      const stateful = this.graph.nodes.filter((node) => node.stateful).map((node) => node.uid);
      checkSnapshotFits(restored, { maxParallelism: this.maxParallelism, stateful, internal: [OUTPUT_UID] }, allowNonRestoredState);
    }
    await this.coordinator.recover(await completedCheckpointIds(this.storage, JOB));
    this.execution = new Execution({
      graph: this.graph,
      scheduler: this.scheduler,
      stateBackend: recordingStateBackend(stateBackend, this.backends),
      maxParallelism: this.maxParallelism,
      chunkSize: 1,
      coordinator: this.coordinator,
      alignment: { mode, alignedTimeout },
      restored,
      restoringAtStart: restored !== undefined,
    });
    this.execution.done.catch((error: unknown) => (this.failure ??= { error: thrown(error) }));
    await this.execution.start();
    this.check();
  }

  /**
   * Pushes a record into `input` (0 by default) with its event timestamp, and processes it to completion.
   * @example h.push({ user: 'ada', n: 1 }, 1000);
   */
  push(value: I, timestamp?: number): void;
  push(value: unknown, timestamp: number | undefined, input: number): void;
  push(value: unknown, timestamp?: number, input = 0): void {
    this.checkInput(input, 'push');
    if (timestamp !== undefined) {
      if (!this.timestamped) throw new HarnessInputError(`push: this harness has timestamped: false (the fragment assigns timestamps); push records without one`);
      if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
        throw new HarnessInputError(`push: the timestamp of ${describe(value)} on input ${input} is ${String(timestamp)}, not a finite number of ms`);
      }
    }
    if (value instanceof ControlElement) throw new HarnessInputError(`push: ${value.constructor.name} is a control element; use pushWatermark, pushBarrier or pushCancel`);
    this.deliver(input, value, timestamp);
  }

  /**
   * Pushes a watermark into `input`: event time there has reached `timestamp`. Watermarks of an input never go back.
   * @example h.pushWatermark(2999); // fires windows ending at 3000
   */
  pushWatermark(timestamp: number, input = 0): void {
    this.checkInput(input, 'pushWatermark');
    if (!this.timestamped) throw new HarnessInputError('pushWatermark: this harness has timestamped: false (the fragment generates its own watermarks)');
    if (typeof timestamp !== 'number' || Number.isNaN(timestamp) || timestamp === Number.NEGATIVE_INFINITY) {
      throw new HarnessInputError(`pushWatermark: ${String(timestamp)} is not a watermark; pass a number of ms`);
    }
    const last = this.watermarks[input]!;
    if (timestamp < last) {
      throw new HarnessInputError(`pushWatermark: the watermark of input ${input} would go back from ${last} to ${timestamp}; watermarks only advance`);
    }
    this.watermarks[input] = timestamp;
    this.deliver(input, new Watermark(Math.min(timestamp, Number.MAX_SAFE_INTEGER)));
  }

  /**
   * Pushes checkpoint `id`'s barrier into `input` (every input when omitted). The first barrier of an id starts that
   * checkpoint; ids only grow. It completes once its barrier has reached every input and the state is persisted:
   * see `completedSnapshots()` after `await settle()`.
   * @example h.pushBarrier(1, 0); h.push(x, 5, 0); h.held(); // → [{ input: 0, value: x, timestamp: 5 }]
   */
  pushBarrier(id: number, input?: number): void {
    if (input !== undefined) this.checkInput(input, 'pushBarrier');
    const started = this.checkpoints.get(id);
    if (started) {
      const targets = input === undefined ? this.inputs() : [input];
      const again = targets.filter((i) => started.pushedTo.has(i));
      if (again.length > 0) throw new HarnessInputError(`pushBarrier: the barrier of checkpoint ${id} was already pushed into input ${again.join(', ')}`);
      targets.forEach((i) => this.deliver(i, started.barrier));
      this.check();
      return;
    }
    const next = this.coordinator.nextCheckpointId;
    if (!(Number.isInteger(id) && id >= next)) {
      throw new HarnessInputError(`pushBarrier: checkpoint ids only grow, and ${id} cannot be used here; use ${next} or more`);
    }
    this.coordinator.skipToId(id);
    this.trigger(input ?? 'all');
  }

  /** Pushes the cancellation marker of checkpoint `id` into `input` (every input when omitted): aligning operators release what they hold. */
  pushCancel(id: number, input?: number): void {
    if (input !== undefined) this.checkInput(input, 'pushCancel');
    const checkpoint = this.checkpoints.get(id);
    if (checkpoint) checkpoint.cancelled = true;
    for (const i of input === undefined ? this.inputs() : [input]) this.deliver(i, new CancelCheckpointMarker(id));
  }

  /** Ends `input`: an ended input no longer holds back watermarks or alignments. Once every input ended, the harness is finished. */
  endInput(input = 0): void {
    this.checkInput(input, 'endInput');
    this.ended[input] = true;
    this.heldRecords?.end(input);
    this.subjects[input]!.complete();
    this.check();
  }

  /**
   * Sets processing time, firing every processing-time timer (and any other action of the clock) due by then, in
   * time order. Time never goes back.
   */
  setProcessingTime(time: number): void {
    if (!(typeof time === 'number' && time >= this.scheduler.now())) {
      throw new HarnessInputError(`setProcessingTime: processing time is ${this.scheduler.now()} and cannot go to ${String(time)}; it only advances`);
    }
    advanceClock(this.scheduler, time);
    this.check();
  }

  /** Current processing time. */
  get processingTime(): number {
    return this.scheduler.now();
  }

  /**
   * Takes a checkpoint now (its barrier goes into every input), waits until it is persisted, and returns it as bytes.
   * @example const restored = await h.restore(await h.snapshot(), { stateBackend: lmdbStateBackend({ path }) });
   */
  async snapshot(): Promise<HarnessSnapshot> {
    this.check();
    const id = this.trigger('all');
    await this.checkpoints.get(id)!.done;
    this.check();
    const snapshot = this.completed.find((s) => s.id === id);
    if (!snapshot) throw new WeirError(`harness: checkpoint ${id} did not complete (it was aborted or subsumed)`);
    return snapshot;
  }

  /** Waits until every checkpoint whose barrier reached every input is complete (or failed). */
  async settle(): Promise<void> {
    const waiting = () =>
      Array.from(this.checkpoints.values()).filter(
        (c) => !c.cancelled && this.inputs().every((i) => c.pushedTo.has(i) || this.ended[i]),
      );
    await Promise.allSettled(waiting().map((c) => c.done));
    this.check();
  }

  /** The checkpoints completed so far, oldest first, as restorable snapshots (call `settle()` first). */
  completedSnapshots(): readonly HarnessSnapshot[] {
    return [...this.completed].sort((a, b) => a.id - b.id);
  }

  /** A new harness over the same fragment and options (with `overrides`), restored from `snapshot`. */
  restore(snapshot: HarnessSnapshot, overrides: Omit<HarnessOptions, 'restore'> = {}): Promise<Harness<I, R>> {
    const { scheduler: _scheduler, startTime: _startTime, ...kept } = this.options;
    return harness(this.fragment, { ...kept, ...overrides, restore: snapshot });
  }

  /**
   * Everything the fragment emitted so far: records with their timestamps, and watermarks with `{ watermarks: true }`.
   * @example expect(h.output()).toEqual([record({ k: 'a', v: 3 }, 2999)]);
   */
  output(options?: { watermarks?: false }): StreamRecord<R>[];
  output(options: { watermarks: true }): OutputElement<R>[];
  output(options: { watermarks?: boolean } = {}): OutputElement<R>[] {
    const elements = this.emitted.main();
    return options.watermarks ? elements : elements.filter((e) => e instanceof StreamRecord);
  }

  /** The values of the records emitted so far, without timestamps. */
  values(): R[] {
    return this.output().map((e) => e.value);
  }

  /** Forgets the output (main and side outputs) collected so far. */
  clearOutput(): void {
    this.emitted.clear();
  }

  /** The records sent to a side output (a process function's `out.side(tag, …)`), with their timestamps. */
  sideOutput<T>(tag: OutputTag<T> | string): StreamRecord<T>[] {
    return this.emitted.side<T>(typeof tag === 'string' ? tag : tag.id);
  }

  /** Records too late for any window (past `allowedLateness`), with their timestamps. */
  lateData<T = unknown>(): StreamRecord<T>[] {
    return this.sideOutput<T>(LATE_DATA);
  }

  /** The records held right now by a multi-input operator aligning a checkpoint (exactly-once), in arrival order. */
  held(): HeldRecord[] {
    return this.heldRecords?.held() ?? [];
  }

  /**
   * What `key` holds of a keyed state of operator `uid` (the stored form: a value, a list, a Map, an accumulator), or
   * undefined. Name the state by its descriptor, or by name once the operator has used it; window state needs the
   * window (or its id).
   * @example h.state('per-user', valueState<number>('count'), 'ada'); // → 3
   */
  state<T = unknown>(uid: string, state: StateDescriptor<unknown, T> | string, key: Key, window?: Window | string): T | undefined {
    this.check();
    // Operators may hold records combined in memory until a snapshot; the state read here must include them.
    for (const recorded of this.backends) if (recorded.uid === uid) flushPendingWrites(recorded.backend);
    return peekRecordedState(this.backends, keyGroupOf(key, this.maxParallelism), uid, state, key, typeof window === 'object' ? window.id : (window ?? ''));
  }

  /**
   * The harness's output as an Observable while `inputs` feed it: each input Observable (one per harness input)
   * emits records (`record(value, ts)` or bare values), `watermark(t)`, `barrier(id)` and `cancelMarker(id)`; the
   * result emits what comes out (records with timestamps, watermarks and barriers when asked) and completes when
   * every input completed. Made for marble tests: see `marbles`.
   */
  drive(inputs: Observable<unknown> | Observable<unknown>[], options: { watermarks?: boolean; barriers?: boolean } = {}): Observable<OutputElement<R> | CheckpointBarrier> {
    const sources = Array.isArray(inputs) ? inputs : [inputs];
    if (sources.length > this.inputCount) throw new HarnessInputError(`drive: ${sources.length} inputs given, the harness has ${this.inputCount}`);
    return driveInputs(sources, (element, input) => this.pushElement(element, input), (listener) => this.emitted.listen(listener), options);
  }

  /** Ends the harness: timers stop, state backends are disposed. */
  close(): void {
    this.execution?.cancel(new WeirError('the harness was closed'));
  }

  private pushElement(element: unknown, input: number): void {
    if (element instanceof StreamRecord) this.push(element.value, element.timestamp, input);
    else if (element instanceof Watermark) this.pushWatermark(element.timestamp, input);
    else if (element instanceof CheckpointBarrier) this.pushBarrier(element.id, input);
    else if (element instanceof CancelCheckpointMarker) this.pushCancel(element.id, input);
    else this.push(element, undefined, input);
  }

  /** Starts the coordinator's next checkpoint; its barrier goes to `to`. */
  private trigger(to: number | 'all'): number {
    this.check();
    const id = this.coordinator.nextCheckpointId;
    this.injectTo = to;
    const result = this.coordinator.trigger();
    this.injectTo = 'all';
    const checkpoint = this.checkpoints.get(id);
    if (!checkpoint) throw new WeirError(`harness: checkpoint ${id} did not start`);
    checkpoint.done = result.then(async (stats: CheckpointStats) => this.completed.push(await readSnapshot(this.storage, JOB, stats))).catch(() => undefined);
    this.check();
    return id;
  }

  /** The coordinator injects a barrier: into the inputs the test named. */
  private injectBarrier(barrier: CheckpointBarrier): void {
    const targets = this.injectTo === 'all' ? this.inputs() : [this.injectTo];
    this.checkpoints.set(barrier.id, { barrier, pushedTo: new Set(), cancelled: false, done: Promise.resolve() });
    targets.forEach((input) => this.deliver(input, barrier));
  }

  private deliver(input: number, element: unknown, timestamp?: number): void {
    if (this.ended[input]) throw new HarnessInputError(`input ${input} has ended; nothing more can be pushed into it`);
    this.check();
    if (element instanceof CheckpointBarrier) this.checkpoints.get(element.id)?.pushedTo.add(input);
    this.heldRecords?.push(input, element, timestamp);
    if (this.record.slot) this.record.slot.current = timestamp;
    this.subjects[input]!.next(element);
    this.check();
  }

  private input(index: number): Flow<unknown> {
    const subject = new Subject<StreamElement<unknown>>();
    this.subjects.push(subject);
    const node: GraphNode = this.graph.add({
      kind: 'harness-input',
      uid: `harness-input-${index}`,
      role: 'source',
      stateful: false,
      inputs: [],
      build: (task) => {
        this.record.slot = task.record;
        return subject.asObservable();
      },
    });
    return new Flow<unknown>(this.graph, node, this.timestamped);
  }

  /** The end of the fragment: what reaches it is noted, with the timestamp riding beside each record; a failure is kept for `check`. */
  private capture(upstream: Observable<StreamElement<unknown>>): Observable<StreamElement<unknown>> {
    return this.emitted.capture(
      upstream,
      () => this.record.slot?.current,
      (error) => {
        this.failure ??= { error: thrown(error) };
        return thrown(error);
      },
    );
  }

  private checkInput(input: number, what: string): void {
    if (!(Number.isInteger(input) && input >= 0 && input < this.inputCount)) {
      throw new HarnessInputError(`${what}: input ${String(input)} does not exist; this harness has ${this.inputCount} input(s), 0 to ${this.inputCount - 1}`);
    }
  }

  /** Rethrows what made the fragment fail (a user function's error, a failed checkpoint). */
  private check(): void {
    if (this.failure) throw this.failure.error;
  }

  private inputs(): number[] {
    return Array.from({ length: this.inputCount }, (_, i) => i).filter((i) => !this.ended[i]);
  }
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * What a fragment's function threw, as it threw it: a job wraps it in a `UserFunctionError` naming the operator, a
 * harness tests one fragment, so it rethrows (and marble diagrams show) the value itself, as RxJS's TestScheduler does.
 */
function thrown(error: unknown): unknown {
  return error instanceof UserFunctionError ? error.cause : error;
}
