import type { Observable } from 'rxjs';
import { taskId, type CheckpointCoordinator, type CheckpointTask, type SavepointTarget } from '../checkpoint/coordinator.js';
import type { LoadedCheckpoint } from '../checkpoint/loadCheckpoint.js';
import { QueryableStateRegistry } from '../query/queryableStateRegistry.js';
import type { OperatorWatermark, RecordTimestamp, StreamElement } from '../core/elements.js';
import { NonReplayableSourceError } from '../core/errors.js';
import { UserFunctionGuard } from '../core/userFunctionFailure.js';
import { keyGroupRangeFor } from '../core/keyGroups.js';
import type { CheckpointMode, GraphNode, TaskContext } from '../core/graph.js';
import type { JobGraph } from '../core/jobGraph.js';
import { DirectObservable, subscribeTo } from '../task/directObservable.js';
import { fanOut } from '../task/fanOut.js';
import { SnapshotWriter } from '../task/snapshotWriter.js';
import { SourceRunner } from '../task/sourceRunner.js';
import { assignSplits } from '../task/splitEnumerator.js';
import { splitReaderFor } from '../task/splitReader.js';
import { mergeSubtasks } from '../task/subtaskMerge.js';
import type { SplitTracking } from '../task/splitTracking.js';
import { SplitWatermarks, type SourceWatermarkOptions } from '../time/sourceWatermarks.js';
import { AttemptBackpressure } from '../task/backpressure.js';
import type { OperatorSpec } from '../operators/operatorSpec.js';
import { OperatorChain } from '../operators/operatorChain.js';
import type { Json, KeyedStateBackend, Scheduler, SinkWriter, SourceReader, StateBackend } from '../core/types.js';
import { AttemptBackends } from './attemptBackends.js';
import type { JobMetricsRecorder } from './jobMetrics.js';
import type { Attempt } from './attempt.js';
import { routeOf, workerOfSubtask, type Placement } from './placement.js';
import type { WorkerExchange } from './workerExchange.js';

/**
 * What an attempt needs of the checkpoint coordinator: the coordinator itself on one thread; in a worker thread, a
 * link that carries the same calls to the coordinator on the main thread as messages.
 */
export type AttemptCoordinator = Pick<CheckpointCoordinator, 'attach' | 'detach' | 'trigger' | 'decline' | 'incremental' | 'persisting' | 'acknowledge' | 'failed'>;

/** An attempt's share of a job run on worker threads: which worker it is, and its channels to the others. */
export interface WorkerShare {
  readonly placement: Placement;
  readonly exchange: WorkerExchange;
}

export interface ExecutionOptions {
  graph: JobGraph;
  scheduler: Scheduler;
  stateBackend: StateBackend;
  maxParallelism: number;
  chunkSize: number;
  /** Absent when checkpointing is off. */
  coordinator: AttemptCoordinator | undefined;
  /** How operators with several inputs align barriers. */
  alignment: { mode: CheckpointMode; alignedTimeout: number | undefined };
  restored: LoadedCheckpoint | undefined;
  /** True when restoring a persisted checkpoint at job start, false for a restart within this process. */
  restoringAtStart: boolean;
  /** Keeps the tasks' counters for metrics, across attempts. */
  metrics?: JobMetricsRecorder;
  /** With worker threads: the subtasks this thread runs, and the exchange with the other workers. */
  share?: WorkerShare;
}

/**
 * One attempt at running a job: builds every node's runtime from the graph, wires sources, operators and sinks,
 * and ends when every sink has seen the end of input (and, with checkpointing, the final checkpoint completed),
 * or when anything fails. A restart is a new Execution restored from the latest checkpoint.
 */
export class Execution implements Attempt {
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private rejectDone!: (error: unknown) => void;
  private readonly runners: SourceRunner<unknown>[] = [];
  /** Readers opened but not yet running: a start that fails before subscribing to them closes them in teardown. */
  private readonly idleReaders = new Set<SourceReader<unknown>>();
  /** What each runner's source failure is attributed to (its uid and source). */
  private readonly runnerSources = new Map<SourceRunner<unknown>, { uid: string; operator: string }>();
  private readonly writers: SinkWriter<unknown>[] = [];
  private readonly backends: AttemptBackends;
  /** Stops reading the ends of the graph. */
  private readonly subscriptions: (() => void)[] = [];
  /** The event timestamp slot shared by every operator of this attempt. */
  private readonly record: RecordTimestamp = { current: undefined };
  /** Each operator's current watermark, by uid, shared by its parallel instances. */
  private readonly watermarks = new Map<string, OperatorWatermark>();
  private readonly startCallbacks: (() => void)[] = [];
  /**
   * Raised by operators that hold records they cannot process yet, and on workers by the exchange when another
   * worker is behind on its credits; the sources pause between chunks meanwhile.
   */
  private readonly backpressure: AttemptBackpressure;
  /** The queryable states of this attempt, filled as its keyed backends register them. */
  readonly queryable: QueryableStateRegistry;
  /** Writes the tasks' state at barriers and acknowledges it to the coordinator. */
  private readonly snapshots: SnapshotWriter;
  private finishedSources = 0;
  /** Where the final snapshot goes when the job is stopped with a savepoint. */
  private finalSavepoint: SavepointTarget | undefined;
  private sourceCount = 0;
  private ended = false;

  constructor(private readonly options: ExecutionOptions) {
    this.backpressure = options.share?.exchange.backpressure ?? new AttemptBackpressure();
    this.queryable = new QueryableStateRegistry(options.graph.jobName, options.maxParallelism);
    this.snapshots = new SnapshotWriter({ clock: options.scheduler, acknowledger: options.coordinator });
    this.backends = new AttemptBackends({
      stateBackend: options.stateBackend,
      maxParallelism: options.maxParallelism,
      scheduler: options.scheduler,
      trackChanges: options.coordinator?.incremental,
      queryable: this.queryable,
      watermarkOf: (uid) => this.watermarkOf(uid),
      record: this.record,
      runsHere: (index) => this.runsHere(index),
    });
    this.done = new Promise<void>((resolve, reject) => ((this.resolveDone = resolve), (this.rejectDone = reject)));
    // The caller may never look at `done` of an attempt that failed during setup; its error reaches it via `start`.
    this.done.catch(() => undefined);
  }

  async start(): Promise<void> {
    const { graph, coordinator, restored } = this.options;
    await this.backends.restore(graph, restored).catch((error: unknown) => {
      this.fail(error);
      throw error;
    });
    const consumers = graph.consumers();
    const outputs = new Map<GraphNode, Observable<StreamElement<unknown>>>();
    /**
     * What the attempt subscribes to: every node nothing downstream consumes. That is each sink, and also a branch
     * that ends in an operator whose state is only read through queries (valid in Flink too), or a source nobody
     * reads: otherwise their records and barriers would never flow, and checkpoints and the end would wait forever.
     */
    const ends: Observable<StreamElement<unknown>>[] = [];
    const tasks = new Map<string, CheckpointTask>();
    let channels = 0;
    for (const node of graph.nodes) {
      const task = this.taskContext(node);
      // With worker threads, a node that does not take its records where they are reads them through the exchange:
      // one channel per input, numbered in graph order, so alike in every worker.
      const route = routeOf(node);
      const inputs = node.inputs.map((input) => {
        const local = outputs.get(input)!;
        const { share } = this.options;
        return share && route.kind !== 'local' ? share.exchange.gate(channels++, route, local, this.record, (id, by) => task.decline(id, by)) : local;
      });
      let output: Observable<StreamElement<unknown>>;
      if (node.source) {
        output = await this.sourceOutput(node, task);
      } else if (node.sink) {
        output = await this.sinkOutput(node, task, inputs[0]!);
      } else {
        output = node.build!(task, inputs);
      }
      if (consumers.get(node)!.length === 0) ends.push(output);
      if (node.stateful) {
        for (let subtask = 0; subtask < (node.parallelism ?? 1); subtask++) tasks.set(taskId(node.uid, subtask), { uid: node.uid, subtask, role: node.role });
      }
      outputs.set(node, consumers.get(node)!.length > 1 ? fanOut(output) : output);
    }
    coordinator?.attach({
      tasks,
      beginSnapshot: (target, storage) => this.snapshots.begin(target, storage),
      endSnapshot: (id) => this.snapshots.end(id),
      injectBarrier: (barrier) => this.runners.forEach((runner) => runner.inject(barrier)),
      injectCancel: (id) => this.runners.forEach((runner) => runner.injectCancel(id)),
      notifyComplete: async (id) => {
        // A writer's commit and finish return a promise or nothing (Sink's contract): Promise.all takes both.
        // eslint-disable-next-line @typescript-eslint/await-thenable
        await Promise.all(this.writers.map((writer) => writer.commit?.(id)));
      },
      fail: (error) => this.fail(error),
    });
    let completedEnds = 0;
    const endsDone = new Promise<void>((resolve) => {
      for (const end of ends) {
        this.subscriptions.push(
          subscribeTo(end, {
            next: () => undefined,
            error: (error) => this.fail(error),
            complete: () => {
              if (++completedEnds === ends.length) resolve();
            },
          }),
        );
      }
      if (ends.length === 0) resolve();
    });
    // Sinks finish (publish what they hold) only after the final checkpoint completed, as Flink commits on its
    // notifyCheckpointComplete: finishing when the input ends would publish output of a checkpoint that may still
    // fail, and a restart from the previous checkpoint would then emit it twice.
    endsDone
      .then(() => this.finalCheckpoint)
      // eslint-disable-next-line @typescript-eslint/await-thenable -- finish returns a promise or nothing, as commit
      .then(() => (this.ended ? undefined : Promise.all(this.writers.map((writer) => writer.finish()))))
      .then(() => this.succeed(), (error) => this.fail(error));
    for (const callback of this.startCallbacks) callback();
    // A source's reader is user code too (an async iterable, an observable): its throw names the source.
    for (const runner of this.runners) {
      const guard = UserFunctionGuard.of({ job: this.options.graph.jobName, ...this.runnerSources.get(runner)! }, (error) => this.fail(error));
      runner.run().catch(guard.fail);
    }
  }

  /** Settles when the final checkpoint completed (immediately without checkpointing). */
  private finalCheckpoint: Promise<unknown> = Promise.resolve();

  /** Graceful stop: sources stop reading, in-flight records drain, the final checkpoint commits the sinks. */
  drain(savepoint?: SavepointTarget): void {
    this.finalSavepoint = savepoint;
    this.runners.forEach((runner) => runner.drain());
  }

  /** Ends the attempt at once; uncommitted output is discarded. */
  cancel(reason: unknown): void {
    this.fail(reason);
  }

  private onSourceFinished(): void {
    if (++this.finishedSources < this.sourceCount) return;
    const { coordinator } = this.options;
    if (!coordinator) {
      this.runners.forEach((runner) => runner.complete());
      return;
    }
    // Flink's final checkpoint: everything the sinks hold is committed before the job reports success.
    this.finalCheckpoint = coordinator.trigger(true, this.finalSavepoint);
    this.finalCheckpoint.catch((error) => this.fail(error));
  }

  private async sourceOutput(node: GraphNode, task: TaskContext): Promise<Observable<StreamElement<unknown>>> {
    const source = node.source!;
    const offsets = task.restoredOperatorStates.map((state) => (state as { offset?: Json } | null)?.offset).filter((offset) => offset !== undefined);
    if (offsets.length > 0 && !source.replayable && this.options.restoringAtStart) {
      throw new NonReplayableSourceError(
        `source '${node.uid}' (${source.name}) cannot resume at a saved position, so the checkpoint cannot be restored exactly; ` +
          'use a replayable source (fromArray, fromIterable, fromFile, …) or start the job without restore',
      );
    }
    const restored = source.replayable ? offsets : [];
    if (!source.splits) {
      if (!task.runsHere) return this.idleSubtaskOutput(node, task);
      return this.subtaskOutput(node, task, await source.open({ uid: node.uid, restoredOffset: restored[0] }));
    }
    // Sources with splits (FLIP-27): the enumerator assigns the splits, each subtask reads its own, one flow goes on.
    const { splits } = source;
    const parallelism = node.parallelism ?? 1;
    const assigned = assignSplits({ uid: node.uid, name: source.name, splits: await splits.list(), parallelism, restored, fromOffset: splits.fromOffset?.bind(splits) });
    // Every worker computes the same assignment from the same saved splits, and reads only its own subtasks'.
    const subtasks = assigned.flatMap((mine, i) => (this.runsHere(i) ? [this.subtaskOutput(node, task.subtask(i), splitReaderFor(splits, node.uid, mine))] : []));
    if (subtasks.length === 0) return this.idleSubtaskOutput(node, task);
    return subtasks.length === 1 ? subtasks[0]! : mergeSubtasks(subtasks, { mode: task.alignment.mode, scheduler: task.scheduler, decline: (id, by) => task.decline(id, by) });
  }

  /**
   * A worker that runs none of a source's subtasks still sends its barriers, watermarks and end downstream, so that
   * the exchanges after it align and end: a subtask with nothing to read, which acknowledges nothing.
   */
  private idleSubtaskOutput(node: GraphNode, task: TaskContext): Observable<StreamElement<unknown>> {
    const idle: TaskContext = { ...task, runsHere: false, snapshot: (_barrier, _capture, forward) => forward() };
    return this.subtaskOutput(node, idle, { read: () => null, offset: () => null });
  }

  /**
   * The flow of one source subtask, driven by its own runner, which saves the reader's offset at each barrier. With
   * the source's watermark strategy, its records get their timestamps and its splits' watermarks between the
   * runner and the operators, and each split's event time is saved beside the offsets.
   */
  private subtaskOutput(node: GraphNode, task: TaskContext, reader: SourceReader<unknown>): Observable<StreamElement<unknown>> {
    this.sourceCount++;
    this.idleReaders.add(reader);
    return new DirectObservable<StreamElement<unknown>>((subscriber) => {
      this.idleReaders.delete(reader);
      const watermarks = node.watermarks === undefined || !task.runsHere ? undefined : new SplitWatermarks({
        uid: node.uid,
        strategy: node.watermarks as SourceWatermarkOptions<unknown>,
        reader: reader as Partial<SplitTracking>,
        record: this.record,
        scheduler: this.options.scheduler,
        restored: task.restoredOperatorStates,
      });
      const runner = new SourceRunner(reader, watermarks?.into(subscriber) ?? subscriber, {
        chunkSize: this.options.chunkSize,
        backpressure: this.backpressure,
        snapshot: (barrier, position, forward) => task.snapshot(barrier, (): { operator: Json } => ({ operator: watermarks === undefined ? { offset: position } : { offset: position, eventTime: watermarks.snapshot() } }), forward),
        finished: () => this.onSourceFinished(),
        started: () => watermarks?.start(),
        counters: task.counters,
      });
      this.runners.push(runner);
      this.runnerSources.set(runner, { uid: node.uid, operator: node.source!.name });
      return () => {
        watermarks?.stop();
        runner.stop();
      };
    });
  }

  private async sinkOutput(node: GraphNode, task: TaskContext, input: Observable<StreamElement<unknown>>): Promise<Observable<StreamElement<unknown>>> {
    // With worker threads a sink runs in worker 0; the others only pass its barriers on (no record reaches them).
    if (!task.runsHere) return OperatorChain.after(input, { task, spec: { kind: node.sink!.name, setup: () => ({ onRecord: () => undefined, onWatermark: () => undefined }) } });
    const writer = await node.sink!.open({
      uid: node.uid,
      restoredState: task.restoredOperatorState,
      checkpointing: this.options.coordinator !== undefined,
      job: task.job,
    });
    this.writers.push(writer);
    // The sink ends its input's chain; a throw of its callback (forEach's function, a custom writer) is named
    // like an operator's (see `operate`).
    const sink: OperatorSpec<unknown, never> = {
      kind: node.sink!.name,
      setup: () => ({
        onRecord: (value) => writer.write(value),
        onBarrier: (barrier) => task.snapshot(barrier, () => ({ operator: writer.snapshot?.(barrier.id) ?? null }), () => undefined),
        // Nothing flows out of a sink: watermarks stop here (side-output records, as everywhere, are dropped).
        onWatermark: () => undefined,
      }),
    };
    return OperatorChain.after(input, { task, spec: sink });
  }

  private taskContext(node: GraphNode, index = 0): TaskContext {
    const { coordinator, restored, maxParallelism, scheduler, graph } = this.options;
    const saved = restored?.states.get(node.uid);
    const parallelism = node.parallelism ?? 1;
    const range = keyGroupRangeFor(index, parallelism, maxParallelism);
    let backend: KeyedStateBackend | undefined;
    const runsHere = this.runsHere(index);
    return {
      runsHere,
      watermark: this.watermarkOf(node.uid),
      subtaskIndex: index,
      parallelism,
      subtask: (i) => this.taskContext(node, i),
      restoredOperatorStates: saved?.operators.filter((operator): operator is Json => operator !== undefined) ?? [],
      uid: node.uid,
      job: graph.jobName,
      scheduler,
      checkpointing: coordinator !== undefined,
      record: this.record,
      alignment: this.options.alignment,
      beforeSources: (callback) => this.startCallbacks.push(callback),
      backpressure: this.backpressure,
      maxParallelism,
      keyGroupRange: range,
      restoredOperatorState: saved?.operators[0],
      keyedBackend: () => (backend ??= this.backends.open(node, index, range)),
      decline: (id, by) => coordinator?.decline(id, { uid: node.uid, subtask: index }, by),
      // A subtask another worker runs acknowledges there: here its barrier only goes on.
      snapshot: (barrier, capture, forward, alignment) =>
        !runsHere ? forward() : this.snapshots.snapshot(barrier.id, { uid: node.uid, subtask: index, range }, capture, forward, alignment),
      counters: this.options.metrics?.task(node.uid, index, this.watermarkOf(node.uid), () => backend),
    };
  }

  /** Whether subtask `index` of a node runs on this thread: always, but with worker threads (i mod workers). */
  private runsHere(index: number): boolean {
    const placement = this.options.share?.placement;
    return placement === undefined || workerOfSubtask(index, placement) === placement.worker;
  }

  private watermarkOf(uid: string): OperatorWatermark {
    let watermark = this.watermarks.get(uid);
    if (watermark === undefined) this.watermarks.set(uid, (watermark = { current: Number.NEGATIVE_INFINITY }));
    return watermark;
  }

  private succeed(): void {
    if (this.ended) return;
    this.ended = true;
    this.options.coordinator?.detach(new Error('the job finished'));
    this.teardown();
    this.resolveDone();
  }

  private fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.options.coordinator?.detach(error);
    this.teardown();
    for (const writer of this.writers) Promise.resolve().then(() => writer.abort()).catch(() => undefined);
    this.rejectDone(error);
  }

  private teardown(): void {
    this.queryable.close();
    this.subscriptions.forEach((stop) => stop());
    this.runners.forEach((runner) => runner.stop());
    // Closed before `done` settles, so a caller that retries at once finds the source's resources released.
    for (const reader of this.idleReaders) {
      try {
        Promise.resolve(reader.close?.()).catch(() => undefined);
      } catch {
        // A reader that fails to close has nothing left to release.
      }
    }
    this.idleReaders.clear();
    this.backends.dispose();
  }
}
