import { CheckpointCoordinator } from '../checkpoint/coordinator.js';
import { heapStateBackend } from '../state/heap/heapStateBackend.js';
import { memoryCheckpointStorage } from '../storage/memoryCheckpointStorage.js';
import { asyncScheduler } from 'rxjs';
import { checkOptions } from '../core/checkOptions.js';
import { JobDefinitionError } from '../core/errors.js';
import { Flow } from '../core/flow.js';
import type { CheckpointMode, GraphNode } from '../core/graph.js';
import { JobGraph } from '../core/jobGraph.js';
import { DEFAULT_MAX_PARALLELISM } from '../core/keyGroups.js';
import { restartStrategy, type RestartStrategy, type RestartStrategyOptions } from './restartStrategy.js';
import { RestoreSelection, type RestoreFrom } from './restoreSelection.js';
import { RunningJob } from './runningJob.js';
import type { JobLogger } from './jobEvents.js';
import type { Attempt } from './attempt.js';
import { Execution, type ExecutionOptions } from './execution.js';
import type { LoadedCheckpoint } from '../checkpoint/loadCheckpoint.js';
import type { CheckpointStorage, Scheduler, Source, StateBackend } from '../core/types.js';
import { DEFAULT_CHUNK_SIZE } from '../core/yieldToEventLoop.js';
import { checkWatermarkOptions } from '../time/watermarkGenerator.js';
import type { SourceWatermarkOptions } from '../time/sourceWatermarks.js';

/** The names `JobOptions`, `CheckpointOptions` and `StartOptions` take (checked in plain JS too). */
const JOB_OPTIONS = ['name', 'stateBackend', 'checkpoints', 'restart', 'maxParallelism', 'parallelism', 'scheduler', 'chunkSize', 'onWarning', 'logger'];
const CHECKPOINT_OPTIONS = [
  'storage',
  'interval',
  'retain',
  'mode',
  'alignedTimeout',
  'timeout',
  'minPause',
  'maxConcurrent',
  'tolerableFailures',
  'retainOnCancel',
  'incremental',
  'fullEvery',
];
const START_OPTIONS = ['restore', 'allowNonRestoredState'];

/** Flink's default checkpoint timeout: 10 minutes. */
const DEFAULT_CHECKPOINT_TIMEOUT = 600_000;

export interface CheckpointOptions {
  /** Where snapshots go; `memoryCheckpointStorage()` by default. */
  storage?: CheckpointStorage;
  /** Milliseconds between periodic checkpoints; without it, checkpoints are taken on demand and at the end. */
  interval?: number;
  /** Completed checkpoints to keep (default 1); older ones are deleted. */
  retain?: number;
  /**
   * `'exactly-once'` (default) aligns barriers at operators with several inputs, holding records of inputs whose
   * barrier came first; `'at-least-once'` holds nothing, so records after a barrier may be counted in its snapshot.
   */
  mode?: CheckpointMode;
  /**
   * Exactly-once only: an alignment that takes longer than this (ms) turns unaligned: barriers overtake held records,
   * and records in flight are saved with the checkpoint instead (Flink's aligned checkpoint timeout).
   */
  alignedTimeout?: number;
  /** A checkpoint not complete after this many ms is aborted and its files removed (default 10 minutes, as Flink). */
  timeout?: number;
  /** Least ms between the end of a checkpoint and the start of the next periodic one (default 0). */
  minPause?: number;
  /** Checkpoints in flight at once (default 1). */
  maxConcurrent?: number;
  /** Consecutive failed checkpoints tolerated before the job fails with the last cause (default 0, as Flink). */
  tolerableFailures?: number;
  /**
   * Keep the job's checkpoints when it is cancelled (default true, so a cancelled job can be restored; Flink's
   * default deletes them unless externalized checkpoints are retained).
   */
  retainOnCancel?: boolean;
  /**
   * Incremental checkpoints (Flink's incremental RocksDB checkpoints, for either backend): each checkpoint persists
   * only the keyed state changed since the previous one, with removals as tombstones, and references the earlier
   * checkpoints' files for the rest. Savepoints stay full. Default false.
   */
  incremental?: boolean;
  /**
   * Incremental only: every `fullEvery`-th checkpoint of a chain is full (default 10), so a restore reads a base and
   * at most `fullEvery - 1` deltas. A chain also restarts with a full checkpoint once its deltas outgrow its base,
   * after a failed checkpoint or a savepoint, and at every (re)start.
   */
  fullEvery?: number;
}

export interface JobOptions {
  /** Names the job's checkpoint directory; letters, digits, `.`, `_` and `-`. */
  name: string;
  /** Where working state lives; `heapStateBackend()` by default. */
  stateBackend?: StateBackend;
  /** Turns checkpointing on. Without it, sinks commit at the end of input and a restart starts from scratch. */
  checkpoints?: CheckpointOptions;
  /** What to do when a user function fails; `{ strategy: 'none' }` by default. */
  restart?: RestartStrategyOptions;
  /** Key groups (default 128): the most instances a keyed operator can be rescaled to; fixed once state exists. */
  maxParallelism?: number;
  /** Instances of each keyed operator, unless the operator says otherwise (default 1). */
  parallelism?: number;
  /** The job's clock: periodic checkpoints, restart delays, timestamps. `asyncScheduler` by default. */
  scheduler?: Scheduler;
  /** Records a source reads between two yields to the event loop (default 1024 in Node, 4096 in browsers). */
  chunkSize?: number;
  /** Where warnings go (a checkpoint skipped on restore, …); `console.warn` by default. */
  onWarning?: (message: string) => void;
  /**
   * A pino-compatible logger (`{ debug, info, warn, error }` taking an object and a message) that gets a line per job
   * event: start, restore, restart (warn, with the cause as `err`), checkpoint completed (debug), failed or aborted
   * (warn, with the reason), savepoint, stop. weir logs nothing without one.
   * @example createJob({ name: 'clicks', logger: pino({ level: 'debug' }) })
   */
  logger?: JobLogger;
}

export interface StartOptions {
  /**
   * `'latest'`: the newest complete checkpoint of this job, falling back past damaged ones (a fresh start when
   * there is none); the path of a `chk-<id>` directory (relative to the storage root, or absolute on disk); or a
   * savepoint, `{ savepoint: path }`, in the checkpoint storage or in `storage`; `job` names the job that took it
   * when that job had another name (a savepoint is otherwise refused as another job's).
   */
  restore?: RestoreFrom;
  /** Restore even when saved state names operators this job no longer has; that state is dropped. */
  allowNonRestoredState?: boolean;
}

/**
 * A job: a dataflow graph built with `source()` and `pipe`, plus the runtime that executes it. Nothing runs until
 * `start()`.
 * @example
 * const job = createJob({ name: 'clicks', checkpoints: { storage: fsCheckpointStorage('./checkpoints'), interval: 500 } });
 * const out = collect<Click>();
 * job.source(fromArray(clicks), { uid: 'clicks' }).pipe(keyBy((c) => c.user), reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'per-user' }), out.sink());
 * await job.start({ restore: 'latest' }).done;
 */
export class Job {
  readonly graph: JobGraph;
  private running: RunningJob | undefined;
  private readonly restartStrategy: RestartStrategy;
  /** The working state of every attempt: the one given, or a heap backend made once. */
  private stateBackend: StateBackend | undefined;

  constructor(readonly options: JobOptions) {
    if (typeof options?.name !== 'string' || !/^[\w.-]+$/.test(options.name) || options.name === '.' || options.name === '..') {
      throw new JobDefinitionError(`job name ${JSON.stringify(options?.name)} is not valid: use letters, digits, '.', '_' and '-'`);
    }
    checkOptions(`createJob (job '${options.name}')`, options, JOB_OPTIONS);
    checkOptions(`job '${options.name}': checkpoints`, options.checkpoints, CHECKPOINT_OPTIONS);
    this.restartStrategy = restartStrategy(this.options.restart, `job '${options.name}': restart`);
    const { interval, retain, timeout, minPause, maxConcurrent, tolerableFailures, alignedTimeout, mode, incremental, fullEvery } = options.checkpoints ?? {};
    const invalid = (what: string) => new JobDefinitionError(`job '${options.name}': checkpoints.${what}`);
    if (interval !== undefined && !(interval > 0)) throw invalid(`interval must be > 0 ms, got ${interval}`);
    if (timeout !== undefined && !(timeout > 0)) throw invalid(`timeout must be > 0 ms, got ${timeout}`);
    // Checked against the default timeout too, and whether or not checkpoints are periodic: a checkpoint taken on
    // demand times out all the same.
    if (alignedTimeout !== undefined && alignedTimeout >= (timeout ?? DEFAULT_CHECKPOINT_TIMEOUT)) {
      throw invalid(`alignedTimeout (${alignedTimeout} ms) must be shorter than timeout (${timeout ?? DEFAULT_CHECKPOINT_TIMEOUT} ms), or no checkpoint could go unaligned in time`);
    }
    if (minPause !== undefined && !(minPause >= 0)) throw invalid(`minPause must be ≥ 0 ms, got ${minPause}`);
    if (maxConcurrent !== undefined && !(Number.isInteger(maxConcurrent) && maxConcurrent >= 1)) throw invalid(`maxConcurrent must be an integer ≥ 1, got ${maxConcurrent}`);
    if (tolerableFailures !== undefined && !(Number.isInteger(tolerableFailures) && tolerableFailures >= 0)) {
      throw invalid(`tolerableFailures must be an integer ≥ 0, got ${tolerableFailures}`);
    }
    if (alignedTimeout !== undefined && !(alignedTimeout >= 0)) throw invalid(`alignedTimeout must be ≥ 0 ms, got ${alignedTimeout}`);
    if (mode !== undefined && mode !== 'exactly-once' && mode !== 'at-least-once') throw invalid(`mode must be 'exactly-once' or 'at-least-once', got ${String(mode)}`);
    if (incremental !== undefined && typeof incremental !== 'boolean') throw invalid(`incremental must be true or false, got ${String(incremental)}`);
    if (fullEvery !== undefined && !(Number.isInteger(fullEvery) && fullEvery >= 1)) throw invalid(`fullEvery must be an integer ≥ 1, got ${fullEvery}`);
    if (retain !== undefined && !(Number.isInteger(retain) && retain >= 1)) {
      throw new JobDefinitionError(`job '${options.name}': checkpoints.retain must be an integer ≥ 1, got ${retain}`);
    }
    const max = options.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    if (!(Number.isInteger(max) && max >= 1 && max <= 32768)) {
      throw new JobDefinitionError(`job '${options.name}': maxParallelism must be an integer from 1 to 32768, got ${max}`);
    }
    const parallelism = options.parallelism ?? ambientParallelism ?? 1;
    if (!(Number.isInteger(parallelism) && parallelism >= 1 && parallelism <= max)) {
      throw new JobDefinitionError(`job '${options.name}': parallelism must be an integer from 1 to maxParallelism (${max}), got ${parallelism}`);
    }
    const { logger } = options;
    if (logger !== undefined && !(['debug', 'info', 'warn', 'error'] as const).every((level) => typeof logger?.[level] === 'function')) {
      throw new JobDefinitionError(`job '${options.name}': logger must have debug, info, warn and error methods (a pino logger, or one with the same methods)`);
    }
    this.graph = new JobGraph(options.name, parallelism);
  }

  get name(): string {
    return this.options.name;
  }

  /**
   * Adds a source and returns its flow. Give it a uid: its offset is saved under it. A source with splits
   * (`fromArray(records, { splits: 4 })`, `fromFile([a, b])`) is read by `parallelism` subtasks, by default the
   * job's; any other source by one.
   * With `watermarks` (Flink's FLIP-27 `WatermarkStrategy` on the source), each subtask gives records their event
   * timestamp and generates watermarks per split, `assignTimestamps`' bounded-out-of-orderness strategy for each
   * split, the subtask's watermark the minimum over its splits not idle (`idleTimeout`) nor ended.
   * @example const clicks = job.source(fromFile('clicks.jsonl', { parse: JSON.parse }), { uid: 'clicks' });
   * @example const orders = job.source(natsSource({ … }), { uid: 'orders', watermarks: { timestamp: (o) => o.ts, outOfOrderness: 1_000, idleTimeout: 5_000 } });
   */
  source<T>(source: Source<T>, options: { uid?: string; parallelism?: number; watermarks?: SourceWatermarkOptions<T> } = {}): Flow<T> {
    checkOptions(`job '${this.name}': source`, options, ['uid', 'parallelism', 'watermarks']);
    if (options.watermarks !== undefined) {
      if (typeof options.watermarks?.timestamp !== 'function') {
        throw new JobDefinitionError(`job '${this.name}': source ${source.name}: watermarks needs timestamp, a function from a record to its event time in ms`);
      }
      checkOptions(`job '${this.name}': source ${source.name}: watermarks`, options.watermarks, ['timestamp', 'outOfOrderness', 'idleTimeout', 'interval']);
      checkWatermarkOptions(`job '${this.name}': source ${source.name}: watermarks`, options.watermarks);
    }
    const parallelism = options.parallelism ?? (source.splits ? this.graph.defaultParallelism : 1);
    const max = this.options.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    if (!(Number.isInteger(parallelism) && parallelism >= 1 && parallelism <= max)) {
      throw new JobDefinitionError(`job '${this.name}': source ${source.name}: parallelism must be an integer from 1 to maxParallelism (${max}), got ${String(parallelism)}`);
    }
    if (parallelism > 1 && !source.splits) {
      throw new JobDefinitionError(
        `job '${this.name}': source ${source.name} has no splits, so one subtask reads it; drop parallelism ${parallelism}, ` +
          'or give it splits (fromArray(records, { splits }), fromIterable(items, { splits }), fromFile([...files]) or fromFile(path, { splits }))',
      );
    }
    const watermarks = options.watermarks as GraphNode['watermarks'];
    const node = this.graph.add({ kind: 'source', uid: options.uid, role: 'source', stateful: true, inputs: [], source, parallelism, watermarks });
    return new Flow<T>(this.graph, node, watermarks !== undefined);
  }

  /** Starts the job (once). `running.done` settles when it ends. */
  start(options: StartOptions = {}): RunningJob {
    return this.launch(options, (execution, restored, restoringAtStart) => new Execution({ ...execution, restored, restoringAtStart }));
  }

  /**
   * Starts the job with attempts made by `attempt` (an `Execution` on this thread for `start`; the worker threads of
   * `startJob`), which get the job's execution options.
   * @internal
   */
  launch(
    options: StartOptions,
    attempt: (execution: JobExecutionOptions, restored: LoadedCheckpoint | undefined, restoringAtStart: boolean, storage: CheckpointStorage | undefined) => Attempt,
    queriesRefused?: string,
    workers?: number,
  ): RunningJob {
    if (this.running) throw new JobDefinitionError(`job '${this.name}' was already started; create a new job to run it again`);
    checkOptions(`job '${this.name}': start`, options, START_OPTIONS);
    if (typeof options.restore === 'object') checkOptions(`job '${this.name}': start restore`, options.restore, ['savepoint', 'storage', 'job']);
    // A branch may end in a keyed operator whose state is read through queries; a job with neither that nor a sink
    // would compute nothing anyone can see.
    if (!this.graph.nodes.some((node) => node.sink || (node.stateful && !node.source))) {
      throw new JobDefinitionError(
        `job '${this.name}' has no sink and no stateful operator, so it would compute nothing: end a flow with collect(), forEach(), toFile() or asObservable()`,
      );
    }
    this.graph.freeze();
    const { name, checkpoints, scheduler = asyncScheduler, onWarning = (message: string) => console.warn(`[weir] ${message}`) } = this.options;
    const maxParallelism = this.options.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    const storage = checkpoints ? (checkpoints.storage ?? memoryCheckpointStorage()) : undefined;
    const retain = checkpoints?.retain ?? 1;
    const coordinator = storage
      ? new CheckpointCoordinator({
          job: name,
          storage,
          scheduler,
          maxParallelism,
          retain,
          timeout: checkpoints?.timeout ?? DEFAULT_CHECKPOINT_TIMEOUT,
          minPause: checkpoints?.minPause ?? 0,
          maxConcurrent: checkpoints?.maxConcurrent ?? 1,
          tolerableFailures: checkpoints?.tolerableFailures ?? 0,
          warn: onWarning,
          ...(checkpoints?.incremental ? { incremental: { fullEvery: checkpoints.fullEvery ?? 10 } } : {}),
        })
      : undefined;
    const uids = new Set(this.graph.nodes.map((node) => node.uid));
    const selection = new RestoreSelection({ job: name, storage, coordinator, retain, maxParallelism, uids, onWarning });
    this.running = new RunningJob({
      job: name,
      graph: this.graph.nodes,
      workers,
      scheduler,
      interval: checkpoints?.interval,
      retainOnCancel: checkpoints?.retainOnCancel ?? true,
      coordinator,
      storage,
      lock: storage?.lock ? () => storage.lock!(name) : undefined,
      restartStrategy: this.restartStrategy,
      logger: this.options.logger,
      attempt: (restored, restoringAtStart, metrics) => attempt({ ...this.executionOptions(coordinator), metrics }, restored, restoringAtStart, storage),
      queriesRefused,
      restoreAtStart: () => selection.atStart(options.restore, options.allowNonRestoredState ?? false),
      restoreAfterFailure: (startedFrom) => selection.afterFailure(startedFrom),
    });
    const ended = (error: unknown) => {
      for (const node of this.graph.nodes) {
        node.source?.ended?.();
        node.sink?.ended?.(error);
      }
    };
    this.running.done.then(() => ended(undefined), ended);
    return this.running;
  }

  /**
   * What every attempt of this job runs with, given its coordinator (a worker thread's link to the main thread's).
   * @internal
   */
  executionOptions(coordinator: ExecutionOptions['coordinator']): JobExecutionOptions {
    const { checkpoints, scheduler = asyncScheduler } = this.options;
    return {
      graph: this.graph,
      scheduler,
      stateBackend: (this.stateBackend ??= this.options.stateBackend ?? heapStateBackend()),
      maxParallelism: this.options.maxParallelism ?? DEFAULT_MAX_PARALLELISM,
      chunkSize: this.options.chunkSize ?? DEFAULT_CHUNK_SIZE,
      coordinator,
      alignment: { mode: checkpoints?.mode ?? 'exactly-once', alignedTimeout: checkpoints?.alignedTimeout },
    };
  }
}

/** The default parallelism of the jobs `withDefaultParallelism` creates. */
let ambientParallelism: number | undefined;

/**
 * Runs `build` (a job module's function, which calls `createJob`) with `parallelism` as the default parallelism of
 * the jobs it creates: `startJob` gives a job as many instances of each keyed operator as workers unless the job
 * says otherwise, and the job module has no other way to learn it before its graph is built. `build` is synchronous,
 * so the default never leaks to another job.
 * @internal
 */
export function withDefaultParallelism<T>(parallelism: number, build: () => T): T {
  const previous = ambientParallelism;
  ambientParallelism = parallelism;
  try {
    return build();
  } finally {
    ambientParallelism = previous;
  }
}

/** What an attempt of a job runs with but for its restore (see `Job.executionOptions`). */
export type JobExecutionOptions = Omit<ExecutionOptions, 'restored' | 'restoringAtStart' | 'share'>;

/** Creates a job. See `Job`. */
export function createJob(options: JobOptions): Job {
  return new Job(options);
}
