import type { KeyedFlow, Flow } from '../../core/flow.js';
import { CheckpointNotFoundError, ConnectorError, JobDefinitionError, OwnershipLostError, PartitionMismatchError } from '../../core/errors.js';
import { DEFAULT_MAX_PARALLELISM, keyGroupOf } from '../../core/keyGroups.js';
import type { CheckpointStorage, Key } from '../../core/types.js';
import { keyBy } from '../../operators/keyBy.js';
import { createJob, type CheckpointOptions, type Job, type JobOptions } from '../../runtime/job.js';
import type { RunningJob } from '../../runtime/runningJob.js';
import { readGroupSavepoint, type GroupSavepointManifest, type SavepointAnswer, type SavepointRequest } from './groupSavepoint.js';
import { keyGroupStorage, savepointCommitStorage } from './keyGroupStorage.js';
import { removeFormerEpochs } from './removeFormerEpochs.js';
import { repartition, type RepartitionOptions } from './repartition.js';
import { DEFAULT_LEASE, joinScaleOut, type ScaleOutMember, type ScaleOutMemberOptions } from './scaleOutMember.js';

/** What `createJob` of a task takes: the task fills in the name, the key groups and the checkpoint storage. */
export type ScaleOutJobOptions = Omit<JobOptions, 'name' | 'maxParallelism' | 'checkpoints'> & {
  checkpoints?: Omit<CheckpointOptions, 'storage' | 'incremental' | 'fullEvery'>;
};

/** One key group's task, as `runScaleOut`'s `define` gets it. */
export interface ScaleOutTask {
  /** The key group the task processes: read its partition, `keyGroupPartitions(...).subjects([task.keyGroup])`. */
  readonly keyGroup: number;
  /** The group's number of key groups. */
  readonly maxParallelism: number;
  /** The task's job name, `<group>-kg<keyGroup>`. */
  readonly name: string;
  /** `createJob` for this task: its name, `maxParallelism` and checkpoint storage are the runner's. */
  createJob(options?: ScaleOutJobOptions): Job;
  /**
   * `keyBy` that checks each key belongs to this task's key group: a record its producer placed in another partition
   * fails the task with `PartitionMismatchError`, as its state would otherwise live with the wrong owner.
   */
  keyBy<T>(selector: (value: T) => Key): (input: Flow<T>) => KeyedFlow<T>;
  /**
   * A `keyBy` on another key inside this job (Kafka Streams' repartition topic): `flow`'s records are published, once
   * each checkpoint commits, to the partition of their new key's key group (`<stream>.<topic>.<keyGroup>`), and the
   * flow returned reads this key group's partition, keyed by the new key. Both parts are this one job: one checkpoint
   * and one commit hold both parts' offsets and state. The runner makes the stream when it is missing.
   * @example
   * const byItem = task.repartition(perShop, { stream: 'SHOP_REPARTITION', topic: 'by-item', key: (sale) => sale.item });
   */
  repartition<T>(flow: Flow<T>, options: RepartitionOptions<T>): KeyedFlow<T>;
}

export interface RunScaleOutOptions extends Omit<ScaleOutMemberOptions, 'onChange' | 'release' | 'onSavepointRequest'> {
  /** The checkpoint storage every member shares (`natsObjectCheckpointStorage`, say). */
  storage: CheckpointStorage;
  /** Milliseconds between a task's checkpoints (1000 by default): each completed one is a commit. */
  checkpointInterval?: number;
  /**
   * How long, in ms, joining and starting a task may keep retrying while the server does not answer (Kafka Streams'
   * `task.timeout.ms`); 60 000 by default. Each retry is reported to `onTask`; past it, `runScaleOut` rejects (or
   * `done`, for a task) with `ConnectorError`.
   */
  taskTimeout?: number;
  /** Called as tasks start (restored from a committed checkpoint, or fresh), take a group savepoint, end, and retry; for logs. */
  onTask?: (event: ScaleOutTaskEvent) => void;
  /**
   * A group savepoint to start from (the `target` of a completed `scaleOutSavepoint`, in `storage`): a key group that
   * has no committed checkpoint in this group yet restores from its savepoint there, whatever group and number of
   * members took it (the number of key groups must be the same). Once a key group committed, it restores from its
   * commits, so members started again with the same option do not go back to the savepoint.
   */
  fromSavepoint?: string;
}

/**
 * A task started or ended on this member, or the server did not answer as the member joined (no `keyGroup`) or a task
 * started: it is tried again after `delayMs`.
 */
export type ScaleOutTaskEvent =
  | { type: 'start'; keyGroup: number; token: number; restoredFrom: string | undefined }
  | { type: 'end'; keyGroup: number; handedOver: boolean; error?: unknown }
  | ({ type: 'savepoint'; keyGroup: number } & SavepointAnswer)
  | { type: 'retry'; keyGroup?: number; attempt: number; delayMs: number; error: unknown };

/** A process's part of a scale-out job: its membership, and one running task per key group it owns. */
export interface ScaleOutRunner {
  readonly member: ScaleOutMember;
  /** The key groups whose task runs now (ascending). */
  running(): number[];
  /** The group's name and number of key groups, as given (for `serveScaleOutQueries`). */
  readonly group: string;
  readonly maxParallelism: number;
  /** The running job of a key group's task, or undefined when none runs here (to query its state). */
  task(keyGroup: number): RunningJob | undefined;
  /**
   * Leaves the group cleanly (on SIGTERM, say): every task stops with a final checkpoint, commits it, and only then
   * is its key group released to its new owner.
   */
  leave(): Promise<void>;
  /**
   * Settles once the member left; rejects with `OwnershipLostError` when it was fenced (a task's commit refused), or
   * with a task's error when one failed (this member then left, handing its other key groups over).
   */
  readonly done: Promise<void>;
}

/**
 * What a key group's owners commit: the path of its last completed checkpoint (or savepoint) in the shared storage,
 * and with a savepoint, the owner's own checkpoint directory (`<group>/kg-<n>/t<token>`), dropped by the next owner.
 */
type Committed = { checkpoint: string; epoch?: string };

interface Task {
  readonly running: RunningJob;
  /** The storage its group savepoints go through: completing one commits it (`savepointCommitStorage`). */
  readonly savepoints: CheckpointStorage;
  /** Set once the runner asked the task to stop: the end is then no failure. */
  stopping?: Promise<void>;
}

/**
 * Runs a job across processes the Kafka Streams way: this process joins the scale-out group (`joinScaleOut`) and
 * runs one weir job per key group it owns, made by `define` (the same code in every process). A task checkpoints to
 * the shared storage under a directory of its key group and its owner's fencing token, and each completed checkpoint
 * is committed, by the fenced compare-and-set, as the key group's pointer: the input offsets are the source's split
 * state in that checkpoint, so they are in the same commit. A new owner restores from the committed pointer, never
 * from a checkpoint a fenced owner wrote after the takeover. When the assignment moves a key group away, its task
 * stops with a final checkpoint, commits it, and only then is the key group released; a dead member's key groups are
 * taken once its lease ran out and restored from their last commit.
 * @example
 * const orders = keyGroupPartitions({ prefix: 'shop', topic: 'orders', maxParallelism: 16 });
 * const runner = await runScaleOut((task) => {
 *   const job = task.createJob();
 *   job.source(natsSource({ servers, stream: 'SHOP', subjects: orders.subjects([task.keyGroup]), bounded: false }), { uid: 'orders' })
 *     .pipe(task.keyBy((o: Order) => o.customer), fold(0, (n) => n + 1, { uid: 'count' }), toNats({ servers, subject: () => 'counts' }, { uid: 'out' }));
 *   return job;
 * }, { servers, group: 'shop', member: `p${process.pid}`, maxParallelism: 16, storage: natsObjectCheckpointStorage({ servers, bucket: 'shop-chk' }) });
 * process.on('SIGTERM', () => void runner.leave());
 */
export async function runScaleOut(define: (task: ScaleOutTask) => Job, options: RunScaleOutOptions): Promise<ScaleOutRunner> {
  const { storage, checkpointInterval = 1000, taskTimeout = 60_000, onTask, fromSavepoint, ...memberOptions } = options;
  const { group, servers, connection, maxParallelism = DEFAULT_MAX_PARALLELISM, lease = DEFAULT_LEASE } = memberOptions;
  const who = `scale-out runner of group '${String(group)}'`;
  if (typeof define !== 'function') throw new JobDefinitionError(`${who}: give a function that makes a key group's job`);
  if (storage === null || typeof storage !== 'object' || typeof storage.write !== 'function') throw new JobDefinitionError(`${who}: storage must be a checkpoint storage every member shares, e.g. natsObjectCheckpointStorage(...)`);
  if (!(Number.isFinite(checkpointInterval) && checkpointInterval > 0)) throw new JobDefinitionError(`${who}: checkpointInterval must be a positive number of ms, got ${String(checkpointInterval)}`);
  if (fromSavepoint !== undefined && (typeof fromSavepoint !== 'string' || fromSavepoint === '')) throw new JobDefinitionError(`${who}: fromSavepoint must be the target of a group savepoint (scaleOutSavepoint), got ${String(fromSavepoint)}`);
  if (!(Number.isFinite(taskTimeout) && taskTimeout >= 0)) throw new JobDefinitionError(`${who}: taskTimeout must be a number of ms ≥ 0, got ${String(taskTimeout)}`);
  const retrying = <T>(what: string, keyGroup: number | undefined, attempt: () => Promise<T>, abandoned?: () => boolean) =>
    untilDeadline(what, taskTimeout, attempt, (tries, delayMs, error) => onTask?.({ type: 'retry', ...(keyGroup === undefined ? {} : { keyGroup }), attempt: tries, delayMs, error }), abandoned);

  const tasks = new Map<number, Task>();
  // Key groups whose release began: their task never starts again before the member gave them up.
  const handingOver = new Set<number>();
  // Changes of ownership are applied one after the other, so a task never starts while its predecessor stops; the
  // first waits for the join to return the member (it reports what it claimed while joining).
  let joined!: () => void;
  let applying = new Promise<void>((resolve) => (joined = resolve));
  // The first task failure (weir fails jobs with errors), which `done` rejects with.
  let failure: Error | undefined;
  let member!: ScaleOutMember;
  // A group savepoint with `stop` this member saw: it starts no task but to take that savepoint, then leaves.
  let halt: SavepointRequest | undefined;
  // The group savepoints taken or being taken here, as `<id>/<keyGroup>`: each key group once per request.
  const savepointsTaken = new Set<string>();
  let manifest: Promise<GroupSavepointManifest> | undefined;

  const startTask = async (keyGroup: number): Promise<void> => {
    const token = member.token(keyGroup);
    if (token === undefined || tasks.has(keyGroup)) return;
    const name = `${group}-kg${keyGroup}`;
    const dir = `${group}/kg-${keyGroup}/t${token}`;
    // Given up on once the key group is no longer this member's (fenced, or handed over while the server was away).
    const abandoned = () => member.token(keyGroup) !== token || handingOver.has(keyGroup);
    // A group savepoint under way covers this key group too, unless its former owner answered for it; a group being
    // stopped does not run it again once answered (its savepoint is the state the group stopped with).
    const request = halt ?? (await retrying(`${name}: reading the group's savepoint request`, keyGroup, () => member.savepointRequest(), abandoned));
    const answered = request !== undefined && (await retrying(`${name}: reading the answers to savepoint ${request.id}`, keyGroup, () => member.savepointAnswered(request.id, keyGroup), abandoned));
    if (abandoned() || (answered && request.stop)) return;
    const pointer = (await retrying(`${name}: reading its committed checkpoint`, keyGroup, () => member.committed(keyGroup), abandoned)) as Committed | undefined;
    if (abandoned()) return;
    let restoredFrom = typeof pointer?.checkpoint === 'string' ? pointer.checkpoint : undefined;
    // The job that took the savepoint restored from, when it is another group's.
    let savepointJob: string | undefined;
    if (restoredFrom === undefined && fromSavepoint !== undefined) {
      const { group: from, keyGroups } = await (manifest ??= readGroupSavepoint(storage, fromSavepoint, maxParallelism));
      restoredFrom = keyGroups[String(keyGroup)];
      if (restoredFrom === undefined) throw new CheckpointNotFoundError(`${who}: group savepoint '${fromSavepoint}' has no savepoint of key group ${keyGroup}; take the group savepoint again`);
      savepointJob = `${from}-kg${keyGroup}`;
    }
    // Every former owner's epoch, committed or fenced before it committed, is dropped once this one committed a
    // checkpoint of its own (it is full: it needs none of their files).
    let committedOnce = false;
    const taskStorage = keyGroupStorage({
      shared: storage,
      dir,
      job: name,
      commit: async (checkpoint) => {
        await member.commit(keyGroup, { checkpoint } satisfies Committed);
        if (!committedOnce) void removeFormerEpochs(storage, `${group}/kg-${keyGroup}`, token).catch(() => undefined);
        committedOnce = true;
      },
    });
    // `keyBy` that checks each key belongs to this key group (task.keyBy, and the keying of a repartition's topic).
    const checkedKeyBy = <T>(selector: (value: T) => Key) =>
      keyBy<T>((value) => {
        const key = selector(value);
        const actual = keyGroupOf(key, maxParallelism);
        if (actual !== keyGroup) {
          throw new PartitionMismatchError(
            `${name}: key ${JSON.stringify(key)} belongs to key group ${actual}, but it was read from key group ${keyGroup}'s partition; ` +
              `its producer must publish it to key group ${actual}'s partition (keyGroupPartitions(...).byKey, or weir's keyGroupOf(key, ${maxParallelism}))`,
          );
        }
        return key;
      });
    // The job `define` made, which a repartition adds its source to, and the streams its repartitions need.
    let made: Job | undefined;
    const preparations: (() => Promise<void>)[] = [];
    const task: ScaleOutTask = {
      keyGroup,
      maxParallelism,
      name,
      createJob: (jobOptions = {}) =>
        (made = createJob({
          ...jobOptions,
          name,
          maxParallelism,
          // A checkpoint that fails (a storage hiccup) is tolerated: the next one commits; a refused commit stops the
          // member, and its tasks with it.
          checkpoints: { interval: checkpointInterval, tolerableFailures: 10, ...jobOptions.checkpoints, storage: taskStorage },
        })),
      keyBy: checkedKeyBy,
      repartition: (flow, repartitionOptions) => {
        const { flow: read, prepare } = repartition({ job: made, name, keyGroup, maxParallelism, servers, connection, keyBy: checkedKeyBy }, flow, repartitionOptions);
        preparations.push(prepare);
        return read;
      },
    };
    const job = define(task);
    if (job?.name !== name) throw new JobDefinitionError(`${who}: define must return the job made by task.createJob() (named '${name}'), got ${job instanceof Object ? `job '${String(job.name)}'` : typeof job}`);
    for (const prepare of preparations) await retrying(`${name}: making its repartition stream`, keyGroup, prepare, abandoned);
    if (abandoned()) return;
    const running = job.start(restoredFrom === undefined ? undefined : { restore: { savepoint: restoredFrom, storage, ...(savepointJob === undefined ? {} : { job: savepointJob }) } });
    const entry: Task = {
      running,
      savepoints: savepointCommitStorage({ shared: storage, commit: async (savepoint) => void (await member.commit(keyGroup, { checkpoint: savepoint, epoch: dir } satisfies Committed)) }),
    };
    tasks.set(keyGroup, entry);
    onTask?.({ type: 'start', keyGroup, token, restoredFrom });
    if (request !== undefined && !answered) void takeSavepoint(keyGroup, request);
    running.done.then(
      () => onTask?.({ type: 'end', keyGroup, handedOver: entry.stopping !== undefined }),
      (error: unknown) => {
        onTask?.({ type: 'end', keyGroup, handedOver: false, error });
        if (entry.stopping !== undefined || error instanceof OwnershipLostError) return;
        // A task that failed for good (its restart strategy gave up) fails the member, which hands the rest over.
        failure ??= error as Error;
        void member.leave();
      },
    );
  };

  /**
   * Takes a key group's part of a group savepoint into `<target>/kg-<n>` and answers for it: with `stop`, the task
   * drains, takes the savepoint as its final snapshot (Flink's stop-with-savepoint) and ends. A task being handed over
   * is left to its new owner, which answers once it runs it.
   */
  const takeSavepoint = async (keyGroup: number, request: SavepointRequest): Promise<void> => {
    const task = tasks.get(keyGroup);
    const taken = `${request.id}/${keyGroup}`;
    if (task === undefined || task.stopping !== undefined || savepointsTaken.has(taken)) return;
    savepointsTaken.add(taken);
    const target = { path: `${request.target}/kg-${keyGroup}`, storage: task.savepoints };
    let answer: SavepointAnswer;
    try {
      let path: string | undefined;
      if (request.stop) {
        const stopped = task.running.stop({ savepoint: target });
        task.stopping = stopped.then(() => undefined, () => undefined).finally(() => tasks.delete(keyGroup));
        const result = await stopped;
        path = [...result.checkpoints].reverse().find((stats) => stats.kind === 'savepoint')?.path;
        if (path === undefined) throw new Error(`its task ended (${result.status}) before its savepoint completed`);
      } else {
        path = (await task.running.savepoint(target)).path;
      }
      answer = { member: member.id, path };
    } catch (error) {
      answer = { member: member.id, error: String((error as Error)?.message ?? error) };
    }
    await member.answerSavepoint(request.id, keyGroup, answer).catch(() => undefined);
    onTask?.({ type: 'savepoint', keyGroup, ...answer });
  };

  /** Waits until every key group answered a group savepoint, or its deadline passed, reading the answers each quarter lease. */
  const untilAnswered = async (request: SavepointRequest): Promise<void> => {
    while (Date.now() < request.deadline) {
      const answered = await member.savepointAnswers(request.id).catch(() => 0);
      if (answered >= maxParallelism) return;
      await new Promise((resolve) => setTimeout(resolve, Math.min(lease / 4, Math.max(0, request.deadline - Date.now()))));
    }
  };

  /** Stops a key group's task with a final checkpoint, which commits: the member then releases the key group. */
  const stopTask = (keyGroup: number): Promise<void> => {
    const task = tasks.get(keyGroup);
    if (task === undefined) return Promise.resolve();
    task.stopping ??= task.running
      .stop()
      .then(() => undefined, () => undefined)
      .finally(() => tasks.delete(keyGroup));
    return task.stopping;
  };

  member = await retrying(`${who}: joining`, undefined, () => joinScaleOut({
    ...memberOptions,
    onChange(owned) {
      const mine = new Set(owned);
      for (const keyGroup of handingOver) if (!mine.has(keyGroup)) handingOver.delete(keyGroup);
      applying = applying.then(async () => {
        // What the member owns now, not when this change was queued: a key group may have been released meanwhile.
        for (const keyGroup of member.owned()) {
          if (tasks.has(keyGroup) || handingOver.has(keyGroup) || failure !== undefined) continue;
          await startTask(keyGroup).catch((error: unknown) => {
            failure ??= error as Error;
            void member.leave();
          });
        }
      });
      // Released key groups were stopped by `release`; a task left on a key group no longer owned is a fenced
      // member's: it stops now, not behind the changes queued.
      for (const [keyGroup, task] of tasks) if (!mine.has(keyGroup) && task.stopping === undefined) void task.running.cancel().catch(() => undefined);
    },
    onSavepointRequest(request) {
      if (request.stop) halt = request;
      const taken = applying.then(async () => {
        await Promise.all(member.owned().map((keyGroup) => takeSavepoint(keyGroup, request)));
      });
      applying = taken;
      // Stopped with a savepoint, the member leaves (its process ends as after SIGTERM), but only once every key group
      // was answered for: one being handed over when the request came is answered by its new owner, which must not
      // have left. Until then key groups it comes to own are started to take their savepoint (`startTask`).
      if (request.stop) void taken.then(() => untilAnswered(request)).then(() => member.leave());
    },
    release: async (keyGroup) => {
      handingOver.add(keyGroup);
      await applying;
      await stopTask(keyGroup);
    },
  }));
  joined();

  const done = member.done.then(
    async () => {
      await applying;
      if (failure !== undefined) throw failure;
    },
    async (error: unknown) => {
      // Fenced: every task stops at once (their commits are refused anyway), not behind the changes queued.
      await Promise.all([...tasks.values()].map((task) => task.running.cancel().catch(() => undefined)));
      await applying;
      // A task that failed first (a server that stayed away past taskTimeout, say) is the cause worth telling, but not
      // one whose checkpoint was gone: a task restarting in place after its key group was taken over (the member
      // paused past its lease) finds its own epoch removed by the new owner, a consequence of the fencing.
      throw failure === undefined || failure instanceof CheckpointNotFoundError ? error : failure;
    },
  );
  done.catch(() => undefined);
  return {
    member,
    running: () => [...tasks.keys()].sort((a, b) => a - b),
    group,
    maxParallelism,
    task: (keyGroup) => tasks.get(keyGroup)?.running,
    async leave() {
      await member.leave();
      await done.catch(() => undefined);
    },
    done,
  };
}

/**
 * Runs `attempt` until it resolves, again after each failure that is not the job's fault (a server that did not answer)
 * with a doubling delay (0.1 s to 5 s), reported to `onRetry`; past `timeout` ms it rejects with `ConnectorError`
 * naming `what`. Stops retrying, resolving undefined, once `abandoned` holds.
 */
async function untilDeadline<T>(what: string, timeout: number, attempt: () => Promise<T>, onRetry: (attempt: number, delayMs: number, error: unknown) => void, abandoned?: () => boolean): Promise<T> {
  const deadline = Date.now() + timeout;
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (error instanceof JobDefinitionError || error instanceof OwnershipLostError) throw error;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new ConnectorError(`${what}: the server did not answer for ${timeout} ms (${tries} attempts, last: ${String((error as Error)?.message ?? error)}); check that it runs and is reachable, or give a longer taskTimeout`, { cause: error });
      }
      const delayMs = Math.min(100 * 2 ** (tries - 1), 5000, left);
      onRetry(tries, delayMs, error);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (abandoned?.() === true) return undefined as T;
    }
  }
}
