import type { CheckpointStats } from '../checkpoint/checkpointStats.js';
import type { CheckpointParticipants } from '../checkpoint/checkpointParticipants.js';
import { loadCheckpoint } from '../checkpoint/loadCheckpoint.js';
import { CheckpointBarrier } from '../core/elements.js';
import { JobDefinitionError } from '../core/errors.js';
import { keyGroupRangeFor } from '../core/keyGroups.js';
import type { CheckpointStorage, KeyGroupRange } from '../core/types.js';
import { UnknownQueryableStateError } from '../query/queryErrors.js';
import { StateQueries, type KeyPage } from '../query/stateQueries.js';
import { EMPTY, type SchedulerAction, type Subscription } from 'rxjs';
import { Execution, type AttemptCoordinator } from './execution.js';
import { JobMetricsRecorder } from './jobMetrics.js';
import type { Job } from './job.js';
import { checkPlaceable, workerOfSubtask, type Placement } from './placement.js';
import { remoteStorage, storageError } from './remoteStorage.js';
import { WorkerExchange, type ExchangePort } from './workerExchange.js';
import { toWireError, type FromWorker, type StorageInfo, type ToWorker } from './workerProtocol.js';

/** What the main thread tells a worker of one attempt when it spawns it. */
export interface WorkerSetup {
  readonly attempt: number;
  readonly placement: Placement;
  /** The uids of the main thread's graph, in order: the worker's must be the same. */
  readonly uids: readonly string[];
  /** The storages the worker reaches through the main thread, by number: 0 is the job's checkpoint storage. */
  readonly storages: readonly StorageInfo[];
  /** The checkpoint to restore (`storage` is a number in `storages`). */
  readonly restore: { path: string; storage: number } | undefined;
  readonly restoringAtStart: boolean;
  /** Whether the job checkpoints, and incrementally. */
  readonly checkpointing: boolean;
  readonly incremental: boolean;
}

/** How a worker talks to the main thread and to the other workers. */
export interface WorkerLinks {
  /** A protocol message to the main thread; `transfer` lists buffers moved with it instead of copied. */
  post(message: FromWorker, transfer?: readonly ArrayBuffer[]): void;
  /** The sending side of the channel to each other worker, by index (undefined at this worker's own). */
  readonly ports: readonly (ExchangePort | undefined)[];
}

/**
 * The task side of one worker of one attempt (Flink's TaskExecutor): runs an `Execution` of the job restricted to
 * this worker's subtasks, with the checkpoint coordinator on the main thread reached through messages, and the
 * storages through the main thread too. `receive` takes the main thread's messages, `receiveData` the other workers'
 * batches; both may arrive before the tasks are built, and wait for them.
 */
/**
 * The key groups of the keyed instances that run in this worker, by operator uid (undefined for the operators
 * without keys, whose files every worker reads): what a restore here has to read of a checkpoint's keyed state.
 */
function ownKeyGroups(job: Job, placement: Placement, maxParallelism: number): (uid: string) => KeyGroupRange[] | undefined {
  const ranges = new Map<string, KeyGroupRange[]>();
  for (const node of job.graph.nodes) {
    if (!node.stateful || !node.keySelector) continue;
    const parallelism = node.parallelism ?? 1;
    const own: KeyGroupRange[] = [];
    for (let instance = 0; instance < parallelism; instance++) {
      if (workerOfSubtask(instance, placement) === placement.worker) own.push(keyGroupRangeFor(instance, parallelism, maxParallelism));
    }
    ranges.set(node.uid, own);
  }
  return (uid) => ranges.get(uid);
}

/** How often a worker sends its counters to the main thread (and once more when its tasks end). */
const METRICS_REPORT_MS = 1_000;

export class WorkerTasks {
  private readonly exchange: WorkerExchange;
  private participants: CheckpointParticipants | undefined;
  /** Messages from the main thread that came before the tasks were wired. */
  private readonly early: ToWorker[] = [];
  private execution: Execution | undefined;
  /** This worker's queryable states, for key listings and `asOf` queries (which read the job's checkpoint storage). */
  private queries: StateQueries | undefined;
  private statesSent = 0;
  private nextRequest = 0;
  private readonly requests = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
  private readonly storages = new Map<number, CheckpointStorage>();
  private finalDone!: () => void;
  private readonly finalCheckpoint = new Promise<void>((resolve) => (this.finalDone = resolve));

  constructor(
    private readonly job: Job,
    private readonly setup: WorkerSetup,
    private readonly links: WorkerLinks,
  ) {
    const options = job.executionOptions(undefined);
    this.exchange = new WorkerExchange({
      placement: setup.placement,
      ports: links.ports,
      maxParallelism: options.maxParallelism,
      scheduler: options.scheduler,
      mode: options.alignment.mode,
    });
  }

  /** The main thread's storage number `info.index`, reached through messages. */
  private storage(info: StorageInfo): CheckpointStorage {
    let storage = this.storages.get(info.index);
    if (!storage) {
      storage = remoteStorage(info.location, info.maxStateSize, (op, path, data, take) => this.request(info.index, op, path, data, take));
      this.storages.set(info.index, storage);
    }
    return storage;
  }

  /** Builds the tasks, restores them, starts them, and reports `ready`; any failure is reported as `error`. */
  async run(): Promise<void> {
    const { job, setup, links } = this;
    const { attempt: a, placement } = setup;
    const w = placement.worker;
    let reporting: Subscription | undefined;
    let report: (() => void) | undefined;
    try {
      this.checkGraph();
      checkPlaceable(job.graph);
      job.graph.freeze();
      const options = job.executionOptions(setup.checkpointing ? this.coordinatorLink() : undefined);
      const restored = setup.restore
        ? await loadCheckpoint(this.storage(setup.storages[setup.restore.storage]!), setup.restore.path, job.name, { keyGroups: ownKeyGroups(job, placement, options.maxParallelism) })
        : undefined;
      // This worker's counters, sent to the main thread, which labels them with the worker and keeps them across attempts.
      const metrics = new JobMetricsRecorder(job.name, options.scheduler, () => 0, EMPTY);
      report = () => {
        links.post({ t: 'metrics', a, w, operators: metrics.snapshot().operators });
        this.reportStates();
      };
      const execution = new Execution({
        ...options,
        restored,
        restoringAtStart: setup.restoringAtStart,
        share: { placement, exchange: this.exchange },
        metrics,
      });
      this.execution = execution;
      await execution.start();
      this.queries = new StateQueries(job.name, setup.checkpointing ? this.storage(setup.storages[0]!) : undefined);
      this.queries.attach(execution.queryable);
      this.reportStates();
      links.post({ t: 'ready', a, w });
      for (const message of this.early.splice(0)) this.receive(message);
      const sendReport = report;
      reporting = options.scheduler.schedule(function (this: SchedulerAction<unknown>) {
        sendReport();
        this.schedule(undefined, METRICS_REPORT_MS);
      }, METRICS_REPORT_MS);
      await execution.done;
      reporting.unsubscribe();
      // The final counts, before `done`: the main thread has them when the job's `done` settles.
      report();
      links.post({ t: 'done', a, w });
    } catch (error) {
      reporting?.unsubscribe();
      // What this attempt counted before it failed: the next attempt's counts go on top of it.
      report?.();
      links.post({ t: 'error', a, w, error: toWireError(error) });
    }
  }

  /** A batch of frames from worker `from`. */
  receiveData(from: number, message: unknown): void {
    this.exchange.receive(from, message);
  }

  /** A message from the main thread. */
  receive(message: ToWorker): void {
    if (message.a !== this.setup.attempt) return;
    if (message.t === 'storageReply') {
      const waiting = this.requests.get(message.request);
      this.requests.delete(message.request);
      if (message.ok) waiting?.resolve(message.value);
      else waiting?.reject(storageError(message.error));
      return;
    }
    const participants = this.participants;
    if (!participants || !this.execution) {
      this.early.push(message);
      return;
    }
    const { attempt: a, placement } = this.setup;
    const w = placement.worker;
    switch (message.t) {
      case 'barrier': {
        const { target } = message;
        // The target comes with the barrier: this worker writes the checkpoint's state wherever its barrier reaches
        // an operator, which can be before another message from the main thread would.
        participants.beginSnapshot(target, this.storage(message.storage));
        participants.injectBarrier(new CheckpointBarrier(target.id, message.timestamp, message.final, target.kind));
        return;
      }
      case 'end':
        return participants.endSnapshot(message.id);
      case 'cancelCheckpoint':
        return participants.injectCancel(message.id);
      case 'commit':
        participants.notifyComplete(message.id).then(
          () => this.links.post({ t: 'committed', a, w, id: message.id }),
          (error: unknown) => this.links.post({ t: 'commitFailed', a, w, id: message.id, error: toWireError(error) }),
        );
        return;
      case 'finalDone':
        return this.finalDone();
      case 'drain':
        return this.execution.drain();
      case 'queryKeys':
        return this.answer(message.request, () => this.queries!.queryKeys(message.name, message.options).then((keys) => ({ keys })));
      case 'query': {
        if (message.asOf !== undefined) {
          return this.answer(message.request, () => this.queries!.query(message.name, message.key, { asOf: message.asOf }).then((value) => ({ value })));
        }
        const state = this.execution.queryable.lookup(message.name);
        const stored = state?.peek(message.key);
        const value = stored === undefined || state === undefined ? undefined : state.descriptor.kind === 'aggregating' ? state.descriptor.aggregate.getResult(stored) : stored;
        return this.links.post({ t: 'queryReply', a, w, request: message.request, known: state !== undefined, value });
      }
    }
  }

  /** This worker's queryable states, to the main thread when there are more than it last sent (a state registers once used). */
  private reportStates(): void {
    const states = this.queries?.queryableStates() ?? [];
    if (states.length === this.statesSent) return;
    this.statesSent = states.length;
    this.links.post({ t: 'states', a: this.setup.attempt, w: this.setup.placement.worker, states });
  }

  /** Answers query `request` with what `ask` finds: `known: false` when this worker has no such state, the error when it failed. */
  private answer(request: number, ask: () => Promise<{ value?: unknown; keys?: KeyPage }>): void {
    const { attempt: a, placement } = this.setup;
    const reply = (answer: Omit<Extract<FromWorker, { t: 'queryReply' }>, 't' | 'a' | 'w' | 'request'>) => this.links.post({ t: 'queryReply', a, w: placement.worker, request, ...answer });
    ask().then(
      (found) => reply({ known: true, ...found }),
      (error: unknown) => (error instanceof UnknownQueryableStateError ? reply({ known: false }) : reply({ known: true, error: toWireError(error) })),
    );
  }

  /** The graph this worker built must be the main thread's, uid for uid, or its state and channels would not match. */
  private checkGraph(): void {
    const mine = this.job.graph.nodes.map((node) => node.uid);
    const main = this.setup.uids;
    for (let i = 0; i < Math.max(mine.length, main.length); i++) {
      if (mine[i] !== main[i]) {
        throw new JobDefinitionError(
          `job '${this.job.name}': worker ${this.setup.placement.worker} built another graph than the main thread: operator ${i} is ` +
            `${mine[i] === undefined ? 'missing' : `'${mine[i]}'`} there, '${main[i] ?? 'missing'}' on the main thread; ` +
            'the job module must build the same graph whatever worker builds it (use context.worker for nothing but logging)',
        );
      }
    }
  }

  /** The coordinator as the worker's execution sees it: every call is a message to the main thread's. */
  private coordinatorLink(): AttemptCoordinator {
    const { attempt: a, placement } = this.setup;
    const w = placement.worker;
    const post = (message: FromWorker) => this.links.post(message);
    return {
      incremental: this.setup.incremental,
      attach: (participants) => {
        this.participants = participants;
      },
      detach: () => undefined,
      // The local sources finished: the main thread triggers the final checkpoint once every worker's have.
      trigger: () => {
        post({ t: 'finished', a, w });
        return this.finalCheckpoint.then(() => ({}) as CheckpointStats);
      },
      decline: (id, task, by) => post({ t: 'decline', a, w, id, task: { uid: task.uid, subtask: task.subtask }, by }),
      persisting: (id, task) => post({ t: 'persisting', a, w, id, task: { uid: task.uid, subtask: task.subtask } }),
      acknowledge: (id, task, handles, stats) => post({ t: 'acknowledge', a, w, id, task: { uid: task.uid, subtask: task.subtask }, handles, stats }),
      failed: (id, task, error) => post({ t: 'failed', a, w, id, task: { uid: task.uid, subtask: task.subtask }, error: toWireError(error) }),
    };
  }

  private request(storage: number, op: 'read' | 'write' | 'list' | 'remove', path: string, data?: Uint8Array, take = false): Promise<unknown> {
    const request = this.nextRequest++;
    const { attempt: a, placement } = this.setup;
    return new Promise((resolve, reject) => {
      this.requests.set(request, { resolve, reject });
      const message: FromWorker = { t: 'storage', a, w: placement.worker, request, storage, op, path, ...(data ? { data } : {}), ...(take ? { take } : {}) };
      this.links.post(message, take && data ? [data.buffer as ArrayBuffer] : undefined);
    });
  }
}
