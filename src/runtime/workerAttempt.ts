import { taskId, type CheckpointTask, type SavepointTarget } from '../checkpoint/coordinator.js';
import type { CheckpointParticipants } from '../checkpoint/checkpointParticipants.js';
import type { LoadedCheckpoint } from '../checkpoint/loadCheckpoint.js';
import { JobDefinitionError, WorkerFailedError } from '../core/errors.js';
import type { CheckpointStorage, Key } from '../core/types.js';
import { mergeKeyPages } from '../query/mergeKeyPages.js';
import { QueryableStateUnavailableError } from '../query/queryErrors.js';
import { QueryableStateRegistry, type QueryableStateInfo } from '../query/queryableStateRegistry.js';
import type { KeyPage, KeyPageOptions } from '../query/stateQueries.js';
import type { SnapshotTarget } from '../task/snapshotWriter.js';
import type { Attempt } from './attempt.js';
import type { JobExecutionOptions } from './job.js';
import type { HostedWorker, WorkerHost } from './workerHost.js';
import { queryErrorOf } from './workerQueries.js';
import type { WorkerSetup } from './workerTasks.js';
import { HEARTBEAT_MS, describeMessage, fromWireError, toWireError, type FromWorker, type ToWorker, type WireError } from './workerProtocol.js';

export interface WorkerAttemptOptions {
  readonly attempt: number;
  readonly workers: number;
  /** The platform that spawns the workers and the channels between them. */
  readonly host: WorkerHost;
  readonly execution: JobExecutionOptions;
  /** The job's checkpoint storage; undefined with checkpointing off. */
  readonly storage: CheckpointStorage | undefined;
  readonly restored: LoadedCheckpoint | undefined;
  readonly restoringAtStart: boolean;
  /** A worker that sends nothing for this long (ms) has hung: the attempt fails (see `HEARTBEAT_MS`). */
  readonly heartbeatTimeout: number;
}

/** Where an attempt is (see `WorkerAttempt`). */
type QueryReply = Extract<FromWorker, { t: 'queryReply' }>;
/** A query as the workers get it, but for the attempt and request numbers `ask` adds. */
type QueryRequest = { t: 'query'; name: string; key: Key; asOf?: number } | { t: 'queryKeys'; name: string; options: KeyPageOptions };

type State = 'spawning' | 'running' | 'finishing' | 'done' | 'failed';

/**
 * One attempt of a job started with `startJob` (weir/node or weir/browser), seen from the main thread: spawns the
 * workers through its host (each builds the job from its definition and runs its share of the subtasks), connects
 * every ordered pair of them with a channel before any record flows, and bridges the job's checkpoint coordinator and storages to them.
 *
 * The protocol is a state machine, so that no order between different workers' messages is assumed:
 * `spawning` until every worker is `ready` (only then is the coordinator attached, so no barrier reaches a worker
 * that has not wired its tasks); `running`; `finishing` once every worker reported its sources `finished` (the final
 * checkpoint is triggered then, never before every worker started); `done` once every worker is `done`, or `failed`
 * at the first failure, which terminates every worker before `done` rejects. A message that comes early (a worker's
 * sources finished before another is ready) is only counted; the transition waits for the rest.
 */
export class WorkerAttempt implements Attempt {
  readonly done: Promise<void>;
  readonly queryable: QueryableStateRegistry;
  private resolveDone!: () => void;
  private rejectDone!: (error: unknown) => void;
  private state: State = 'spawning';
  private readonly spawned: HostedWorker[] = [];
  private readonly ready = new Set<number>();
  private readonly finished = new Set<number>();
  private readonly ended = new Set<number>();
  private markStarted!: () => void;
  private failStart!: (error: unknown) => void;
  private readonly started: Promise<void>;
  private finalSavepoint: SavepointTarget | undefined;
  /** Storages the workers write to, by number: the job's first, then savepoints' own as they are used. */
  private readonly storages: CheckpointStorage[] = [];
  /** The snapshot target the coordinator announced for the barrier it injects next. */
  private announced: { target: SnapshotTarget; storage: number } | undefined;
  /** Commits in flight: the workers that have not answered yet, by checkpoint id. */
  private readonly commits = new Map<number, { waiting: Set<number>; resolve(): void; reject(error: unknown): void }>();
  /** Queries in flight: the workers that have not answered yet and the replies so far, by request. */
  private readonly queries = new Map<number, { waiting: number; replies: QueryReply[]; resolve(replies: QueryReply[]): void; reject(error: unknown): void }>();
  private nextQuery = 0;
  /** The queryable states the workers have registered, by name. */
  private readonly states = new Map<string, QueryableStateInfo>();
  /**
   * When each worker was last heard from (`Date.now()`; undefined before its first message, while its script and
   * modules load, which may take long on a cold cache and whose failure the platform reports), and the timer that checks it.
   */
  private readonly heard: (number | undefined)[] = [];
  private watchdog: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly options: WorkerAttemptOptions) {
    this.queryable = new QueryableStateRegistry(options.execution.graph.jobName, options.execution.maxParallelism);
    this.queryable.close();
    this.done = new Promise<void>((resolve, reject) => ((this.resolveDone = resolve), (this.rejectDone = reject)));
    this.done.catch(() => undefined);
    this.started = new Promise<void>((resolve, reject) => ((this.markStarted = resolve), (this.failStart = reject)));
    this.started.catch(() => undefined);
    if (options.storage) this.storages.push(options.storage);
  }

  private get job(): string {
    return this.options.execution.graph.jobName;
  }

  /** Spawns the workers; resolves once every one has built, restored and started its tasks. */
  async start(): Promise<void> {
    const { workers, attempt, restored, restoringAtStart, execution, host } = this.options;
    const { graph, coordinator } = execution;
    // One channel per ordered pair: worker i sends to j on outgoing[i][j], which j reads as incoming[j][i].
    const outgoing: unknown[][] = Array.from({ length: workers }, () => new Array<unknown>(workers).fill(undefined));
    const incoming: unknown[][] = Array.from({ length: workers }, () => new Array<unknown>(workers).fill(undefined));
    for (let from = 0; from < workers; from++) {
      for (let to = 0; to < workers; to++) {
        if (from === to) continue;
        const [send, receive] = host.channel();
        outgoing[from]![to] = send;
        incoming[to]![from] = receive;
      }
    }
    const restore = restored ? { path: restored.path, storage: this.storageNumber(restored.storage ?? this.options.storage!) } : undefined;
    for (let w = 0; w < workers; w++) {
      const setup: WorkerSetup = {
        attempt,
        placement: { worker: w, workers },
        uids: graph.nodes.map((node) => node.uid),
        storages: this.storages.map((storage, index) => ({ index, location: storage.location, maxStateSize: storage.maxStateSize })),
        restore,
        restoringAtStart,
        checkpointing: coordinator !== undefined,
        incremental: coordinator?.incremental ?? false,
      };
      const worker = host.spawn(w, { setup, outgoing: outgoing[w]!, incoming: incoming[w]! }, {
        message: (message) => this.onMessage(w, message),
        error: (error) => this.fail(this.workerError(w, 'had an uncaught error', error)),
        exit: (code) => {
          if (this.state !== 'done' && this.state !== 'failed') {
            this.fail(new WorkerFailedError(`job '${this.job}': worker ${w} exited with code ${code} while the job ran; it restarts as its restart strategy allows`, w));
          }
        },
      });
      this.spawned.push(worker);
      this.heard.push(undefined);
    }
    this.watchdog = setInterval(() => this.checkHeartbeats(), HEARTBEAT_MS);
    await this.started;
  }

  /** Graceful stop: every worker's sources stop, and the final checkpoint (a savepoint, if given) goes on as usual. */
  drain(savepoint?: SavepointTarget): void {
    this.finalSavepoint = savepoint;
    this.post({ t: 'drain', a: this.options.attempt });
  }

  /**
   * A query. Live, it is asked of every worker: only the one running the instance of the key's group can hold a
   * value, so the answer is the value one of them found (undefined when none did). `asOf` a checkpoint, one worker
   * that knows the state reads it (the checkpoint holds every key group).
   */
  async query(name: string, key: Key, asOf?: number): Promise<{ known: boolean; value: unknown }> {
    const request: QueryRequest = { t: 'query', name, key, ...(asOf === undefined ? {} : { asOf }) };
    if (asOf !== undefined) {
      const reply = await this.askInTurn(request);
      return { known: reply !== undefined, value: reply?.value };
    }
    const replies = await this.ask(request, this.workerIndexes());
    return { known: replies.some((reply) => reply.known), value: replies.find((reply) => reply.value !== undefined)?.value };
  }

  /**
   * A page of a state's keys. Live, every worker lists the keys of its own key groups and the pages are merged
   * (`mergeKeyPages`); `asOf` a checkpoint, one worker that knows the state lists the checkpoint's keys.
   */
  async queryKeys(name: string, options: KeyPageOptions): Promise<{ known: boolean; page: KeyPage }> {
    const request: QueryRequest = { t: 'queryKeys', name, options };
    if (options.asOf !== undefined) {
      const reply = await this.askInTurn(request);
      return reply ? { known: true, page: reply.keys! } : { known: false, page: { keys: [] } };
    }
    const known = (await this.ask(request, this.workerIndexes())).filter((reply) => reply.known);
    return { known: known.length > 0, page: mergeKeyPages(known.map((reply) => reply.keys!), options.limit) };
  }

  /** The queryable states the workers have registered so far (each sends them when it has more). */
  queryableStates(): QueryableStateInfo[] {
    return [...this.states.values()];
  }

  /** Asks the workers one after another until one knows the state: its reply, or undefined when none does. */
  private async askInTurn(request: QueryRequest): Promise<QueryReply | undefined> {
    for (const w of this.workerIndexes()) {
      const [reply] = await this.ask(request, [w]);
      if (reply!.known) return reply;
    }
    return undefined;
  }

  /** Sends a query to `workers`; resolves with their replies, rejects with the first one's error. */
  private ask(request: QueryRequest, workers: readonly number[]): Promise<QueryReply[]> {
    if (this.state !== 'running' && this.state !== 'finishing') {
      return Promise.reject(new QueryableStateUnavailableError(`job '${this.job}' is starting, restarting or ending: its workers answer no query now; retry`));
    }
    const id = this.nextQuery++;
    return new Promise((resolve, reject) => {
      this.queries.set(id, { waiting: workers.length, replies: [], resolve, reject });
      for (const w of workers) this.postTo(w, { ...request, a: this.options.attempt, request: id });
    });
  }

  private workerIndexes(): number[] {
    return this.spawned.map((_, w) => w);
  }

  /** Ends the attempt at once; settles once every worker has exited. */
  async cancel(reason: unknown): Promise<void> {
    this.fail(reason);
    await this.terminated();
  }

  /**
   * A worker not heard from for `heartbeatTimeout` has hung: its event loop never came back to send its heartbeat (a
   * user function that loops; in a browser, a Worker that called `close()`, which no event reports).
   */
  private checkHeartbeats(): void {
    if (this.state === 'done' || this.state === 'failed') return clearInterval(this.watchdog);
    const { heartbeatTimeout } = this.options;
    const now = Date.now();
    const hung = this.heard.findIndex((at) => at !== undefined && now - at > heartbeatTimeout);
    if (hung < 0) return;
    this.fail(
      new WorkerFailedError(
        `job '${this.job}': worker ${hung} sent nothing for ${now - this.heard[hung]!} ms (heartbeatTimeout ${heartbeatTimeout} ms): it hung, in a ` +
          'user function that never returns or a worker that closed itself; it restarts as its restart strategy allows (raise heartbeatTimeout for longer pauses)',
        hung,
      ),
    );
  }

  private onMessage(w: number, message: FromWorker): void {
    this.heard[w] = Date.now();
    if (message.t === 'heartbeat') return;
    this.options.host.trace?.(describeMessage('←', w, message));
    // A failed or ended attempt takes nothing more; a message of another attempt never reaches this one.
    if (message.a !== this.options.attempt || this.state === 'failed' || this.state === 'done') return;
    const coordinator = this.options.execution.coordinator;
    switch (message.t) {
      case 'ready':
        this.ready.add(w);
        if (this.ready.size === this.options.workers && this.state === 'spawning') {
          this.state = 'running';
          coordinator?.attach(this.participants());
          this.markStarted();
        }
        return this.maybeFinish();
      case 'states':
        for (const info of message.states) this.states.set(info.name, info);
        return;
      case 'metrics':
        return this.options.execution.metrics?.reportWorker(this.options.attempt, w, this.options.workers, message.operators);
      case 'finished':
        this.finished.add(w);
        return this.maybeFinish();
      case 'done':
        this.ended.add(w);
        if (this.ended.size === this.options.workers) void this.succeed();
        return;
      case 'error':
        return this.fail(this.workerError(w, 'failed', message.error));
      case 'persisting':
        return coordinator?.persisting(message.id, message.task);
      case 'acknowledge':
        return coordinator?.acknowledge(message.id, message.task, message.handles, message.stats);
      case 'failed':
        return coordinator?.failed(message.id, message.task, fromWireError(message.error));
      case 'decline':
        return coordinator?.decline(message.id, message.task, message.by);
      case 'committed': {
        const commit = this.commits.get(message.id);
        commit?.waiting.delete(w);
        if (commit && commit.waiting.size === 0) {
          this.commits.delete(message.id);
          commit.resolve();
        }
        return;
      }
      case 'commitFailed': {
        const commit = this.commits.get(message.id);
        this.commits.delete(message.id);
        commit?.reject(this.workerError(w, `failed to commit checkpoint ${message.id}`, message.error));
        return;
      }
      case 'storage':
        return this.serveStorage(w, message);
      case 'queryReply': {
        const query = this.queries.get(message.request);
        if (!query) return;
        if (message.error) {
          this.queries.delete(message.request);
          return query.reject(queryErrorOf(message.error));
        }
        query.replies.push(message);
        if (--query.waiting === 0) {
          this.queries.delete(message.request);
          query.resolve(query.replies);
        }
        return;
      }
    }
  }

  /** The final checkpoint goes once every worker started and every worker's sources finished. */
  private maybeFinish(): void {
    if (this.state !== 'running' || this.finished.size < this.options.workers) return;
    this.state = 'finishing';
    const { coordinator } = this.options.execution;
    if (!coordinator) return;
    coordinator.trigger(true, this.finalSavepoint).then(
      () => this.post({ t: 'finalDone', a: this.options.attempt }),
      (error: unknown) => this.fail(error),
    );
  }

  /** What the coordinator sends to the tasks, as messages to every worker. */
  private participants(): CheckpointParticipants {
    const { graph } = this.options.execution;
    const a = this.options.attempt;
    const tasks = new Map<string, CheckpointTask>();
    for (const node of graph.nodes) {
      if (!node.stateful) continue;
      for (let subtask = 0; subtask < (node.parallelism ?? 1); subtask++) tasks.set(taskId(node.uid, subtask), { uid: node.uid, subtask, role: node.role });
    }
    return {
      tasks,
      beginSnapshot: (target, storage) => {
        this.announced = { target, storage: this.storageNumber(storage) };
      },
      injectBarrier: (barrier) => {
        const announced = this.announced!;
        const storage = this.storages[announced.storage]!;
        this.post({
          t: 'barrier',
          a,
          target: announced.target,
          storage: { index: announced.storage, location: storage.location, maxStateSize: storage.maxStateSize },
          timestamp: barrier.timestamp,
          final: barrier.final,
        });
      },
      endSnapshot: (id) => this.post({ t: 'end', a, id }),
      injectCancel: (id) => this.post({ t: 'cancelCheckpoint', a, id }),
      notifyComplete: (id) =>
        new Promise<void>((resolve, reject) => {
          this.commits.set(id, { waiting: new Set(this.spawned.map((_, w) => w)), resolve, reject });
          this.post({ t: 'commit', a, id });
        }),
      fail: (error) => this.fail(error),
    };
  }

  /** The number the workers know a storage by: a savepoint into another storage gets the next one. */
  private storageNumber(storage: CheckpointStorage): number {
    let index = this.storages.indexOf(storage);
    if (index < 0) index = this.storages.push(storage) - 1;
    return index;
  }

  private serveStorage(w: number, message: Extract<FromWorker, { t: 'storage' }>): void {
    const a = this.options.attempt;
    const storage = this.storages[message.storage]!;
    const call = (): Promise<unknown> => {
      switch (message.op) {
        case 'read':
          return storage.read(message.path);
        case 'write':
          return storage.write(message.path, message.data!);
        case 'list':
          return storage.list(message.path);
        case 'remove':
          return storage.remove(message.path);
      }
    };
    Promise.resolve()
      .then(call)
      .then(
        (value) => {
          if (!message.take) return this.postTo(w, { t: 'storageReply', a, request: message.request, ok: true, value });
          // The written bytes go back to the worker's buffers (a copy, if the storage keeps the ones it was given).
          const bytes = storage.releasesWrittenData === true ? message.data! : message.data!.slice();
          this.postTo(w, { t: 'storageReply', a, request: message.request, ok: true, value: bytes }, [bytes.buffer as ArrayBuffer]);
        },
        (error: unknown) => this.postTo(w, { t: 'storageReply', a, request: message.request, ok: false, error: toWireError(error) }),
      );
  }

  private workerError(w: number, what: string, cause: WireError): Error {
    const error = fromWireError(cause);
    const message = `job '${this.job}': worker ${w} ${what}: ${cause.name}: ${cause.message}`;
    // A definition error fails every attempt alike: it stays one, so the job fails at once instead of restarting.
    if (cause.name === 'JobDefinitionError' || cause.name === 'NonRestoredStateError') return new JobDefinitionError(message, { cause: error });
    return new WorkerFailedError(message, w, { cause: error });
  }

  private post(message: ToWorker): void {
    for (let w = 0; w < this.spawned.length; w++) this.postTo(w, message);
  }

  private postTo(w: number, message: ToWorker, transfer?: readonly ArrayBuffer[]): void {
    if (this.state === 'failed' || this.state === 'done') return;
    this.options.host.trace?.(describeMessage('→', w, message));
    this.spawned[w]!.post(message, transfer);
  }

  private async succeed(): Promise<void> {
    this.state = 'done';
    clearInterval(this.watchdog);
    this.options.execution.coordinator?.detach(new Error('the job finished'));
    await this.terminated();
    this.resolveDone();
  }

  private fail(error: unknown): void {
    if (this.state === 'done' || this.state === 'failed') return;
    this.state = 'failed';
    clearInterval(this.watchdog);
    this.options.execution.coordinator?.detach(error);
    for (const commit of this.commits.values()) commit.reject(error);
    this.commits.clear();
    for (const query of this.queries.values()) query.reject(new QueryableStateUnavailableError(`job '${this.job}' is restarting or ending: the query was not answered; retry`));
    this.queries.clear();
    this.failStart(error);
    void this.terminated().then(() => this.rejectDone(error));
  }

  /** Terminates every worker; settles once each has exited. */
  private async terminated(): Promise<void> {
    await Promise.all(this.spawned.map((worker) => worker.terminate().catch(() => undefined)));
  }
}
