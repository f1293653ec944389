import { CheckpointCoordinator } from '../checkpoint/coordinator';
import { completedCheckpointIds, loadCheckpoint, loadLatestCheckpoint, type LoadedCheckpoint } from '../checkpoint/loadCheckpoint';
import { checkpointDir } from '../checkpoint/layout';
import { heapStateBackend } from '../state/heap/heapStateBackend';
import { memoryCheckpointStorage } from '../storage/memoryCheckpointStorage';
import { asyncScheduler } from 'rxjs';
import { CheckpointCorruptedError, CheckpointNotFoundError, JobDefinitionError, NonRestoredStateError } from './errors';
import { Flow } from './flow';
import { JobGraph } from './jobGraph';
import { DEFAULT_MAX_PARALLELISM } from './keyGroups';
import { restartStrategy, type RestartStrategyOptions } from './restartStrategy';
import { RunningJob } from './runningJob';
import type { CheckpointStorage, Scheduler, Source, StateBackend } from './types';

export interface CheckpointOptions {
  /** Where snapshots go; `memoryCheckpointStorage()` by default. */
  storage?: CheckpointStorage;
  /** Milliseconds between periodic checkpoints; without it, checkpoints are taken on demand and at the end. */
  interval?: number;
  /** Completed checkpoints to keep (default 1); older ones are deleted. */
  retain?: number;
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
  /** Key groups (default 128): the most instances a keyed operator can be rescaled to. */
  maxParallelism?: number;
  /** The job's clock: periodic checkpoints, restart delays, timestamps. `asyncScheduler` by default. */
  scheduler?: Scheduler;
  /** Records a source reads between two yields to the event loop (default 1024). */
  chunkSize?: number;
  /** Where warnings go (a checkpoint skipped on restore, …); `console.warn` by default. */
  onWarning?: (message: string) => void;
}

export interface StartOptions {
  /**
   * `'latest'`: the newest complete checkpoint of this job, falling back past damaged ones (a fresh start when
   * there is none); or the path of a `chk-<id>` directory (relative to the storage root, or absolute on disk).
   */
  restore?: 'latest' | string;
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

  constructor(readonly options: JobOptions) {
    if (typeof options?.name !== 'string' || !/^[\w.-]+$/.test(options.name) || options.name === '.' || options.name === '..') {
      throw new JobDefinitionError(`job name ${JSON.stringify(options?.name)} is not valid: use letters, digits, '.', '_' and '-'`);
    }
    const { interval, retain } = options.checkpoints ?? {};
    if (interval !== undefined && !(interval > 0)) throw new JobDefinitionError(`job '${options.name}': checkpoints.interval must be > 0 ms, got ${interval}`);
    if (retain !== undefined && !(Number.isInteger(retain) && retain >= 1)) {
      throw new JobDefinitionError(`job '${options.name}': checkpoints.retain must be an integer ≥ 1, got ${retain}`);
    }
    const max = options.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    if (!(Number.isInteger(max) && max >= 1 && max <= 32768)) {
      throw new JobDefinitionError(`job '${options.name}': maxParallelism must be an integer from 1 to 32768, got ${max}`);
    }
    this.graph = new JobGraph(options.name);
  }

  get name(): string {
    return this.options.name;
  }

  /**
   * Adds a source and returns its flow. Give it a uid: its offset is saved under it.
   * @example const clicks = job.source(fromFile('clicks.jsonl', { parse: JSON.parse }), { uid: 'clicks' });
   */
  source<T>(source: Source<T>, options: { uid?: string } = {}): Flow<T> {
    const node = this.graph.add({ kind: 'source', uid: options.uid, role: 'source', stateful: true, inputs: [], source: source as Source<unknown> });
    return new Flow<T>(this.graph, node);
  }

  /** Starts the job (once). `running.done` settles when it ends. */
  start(options: StartOptions = {}): RunningJob {
    if (this.running) throw new JobDefinitionError(`job '${this.name}' was already started; create a new job to run it again`);
    this.graph.freeze();
    const { name, checkpoints, scheduler = asyncScheduler, onWarning = (message: string) => console.warn(`[weir] ${message}`) } = this.options;
    const maxParallelism = this.options.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    const storage = checkpoints ? (checkpoints.storage ?? memoryCheckpointStorage()) : undefined;
    const retain = checkpoints?.retain ?? 1;
    const coordinator = storage ? new CheckpointCoordinator({ job: name, storage, scheduler, maxParallelism, retain }) : undefined;
    const strategy = restartStrategy(this.options.restart);
    this.running = new RunningJob({
      job: name,
      scheduler,
      interval: checkpoints?.interval,
      coordinator,
      restartStrategy: strategy,
      execution: {
        graph: this.graph,
        scheduler,
        stateBackend: this.options.stateBackend ?? heapStateBackend(),
        maxParallelism,
        chunkSize: this.options.chunkSize ?? 1024,
        coordinator,
      },
      restoreAtStart: async () => {
        if (options.restore !== undefined && !storage) {
          throw new JobDefinitionError(`job '${name}' cannot restore: it has checkpointing off; pass the checkpoints option with the storage to restore from`);
        }
        if (!storage || !coordinator) return undefined;
        const restored =
          options.restore === undefined
            ? undefined
            : options.restore === 'latest'
              ? await loadLatestCheckpoint(storage, name, onWarning)
              : await loadCheckpoint(storage, options.restore, name);
        if (restored) this.checkOperatorsMatch(restored, options.allowNonRestoredState ?? false);
        await coordinator.recover(await completedCheckpointIds(storage, name));
        return restored;
      },
      restoreAfterFailure: async (startedFrom) => {
        if (!storage || !coordinator) return undefined;
        const candidates = coordinator.history
          .slice(-retain)
          .reverse()
          .map((stats) => checkpointDir(name, stats.id));
        if (startedFrom) candidates.push(startedFrom.path);
        for (const dir of candidates) {
          try {
            return await loadCheckpoint(storage, dir, name);
          } catch (error) {
            if (!(error instanceof CheckpointCorruptedError || error instanceof CheckpointNotFoundError)) throw error;
            onWarning(`restart: checkpoint ${dir} cannot be restored (${(error as Error).message}); trying an older one`);
          }
        }
        return undefined;
      },
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

  private checkOperatorsMatch(restored: LoadedCheckpoint, allowNonRestoredState: boolean): void {
    const uids = new Set(this.graph.nodes.map((node) => node.uid));
    const missing = Array.from(restored.states.keys()).filter((uid) => !uids.has(uid));
    if (missing.length > 0 && !allowNonRestoredState) {
      throw new NonRestoredStateError(
        `checkpoint ${restored.path} holds state for operators this job does not have: ${missing.map((uid) => `'${uid}'`).join(', ')}; ` +
          'give those operators back their uids, or start with allowNonRestoredState: true to drop that state',
      );
    }
  }
}

/** Creates a job. See `Job`. */
export function createJob(options: JobOptions): Job {
  return new Job(options);
}
