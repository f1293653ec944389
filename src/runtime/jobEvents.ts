import type { Observable } from 'rxjs';
import type { CheckpointStats } from '../checkpoint/checkpointStats.js';
import type { JobResult, RestoredFrom } from './jobResult.js';

/**
 * What happens to a running job, as `weir/node` publishes it on `diagnostics_channel` (`weir:<type>`) and a job's
 * `logger` logs it. Every event names its job.
 */
export type JobEvent =
  /** The job was started (before it restores anything). */
  | { readonly type: 'job:start'; readonly job: string }
  /** An attempt restored a checkpoint or savepoint: at the start (`restart: false`) or after a failure. */
  | { readonly type: 'restore'; readonly job: string; readonly restoredFrom: RestoredFrom; readonly restart: boolean }
  /** An attempt failed and the restart strategy runs another after `delayMs`; `restarts` counts them so far. */
  | { readonly type: 'restart'; readonly job: string; readonly restarts: number; readonly delayMs: number; readonly cause: unknown }
  /** A checkpoint completed (savepoints have an event of their own). */
  | { readonly type: 'checkpoint:complete'; readonly job: string; readonly checkpoint: CheckpointStats }
  /** A checkpoint or savepoint failed or was aborted; `reason` is why. */
  | { readonly type: 'checkpoint:failed'; readonly job: string; readonly checkpoint: CheckpointStats; readonly reason: string }
  /** A savepoint completed (`running.savepoint()`, `stop({ savepoint })`). */
  | { readonly type: 'savepoint'; readonly job: string; readonly checkpoint: CheckpointStats }
  /** The job ended: finished, stopped or cancelled (`result`), or failed (`error`). */
  | { readonly type: 'job:stop'; readonly job: string; readonly result?: JobResult; readonly error?: unknown };

/** The names of every job event, in the order a job's life goes through them. */
export const JOB_EVENT_TYPES: readonly JobEvent['type'][] = ['job:start', 'restore', 'checkpoint:complete', 'checkpoint:failed', 'savepoint', 'restart', 'job:stop'];

/**
 * A pino-compatible logger (pino, or anything with these four methods taking an object and a message): `createJob`'s
 * `logger` option. weir logs nothing without one.
 * @example
 * import pino from 'pino';
 * const job = createJob({ name: 'clicks', logger: pino() });
 */
export interface JobLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Listeners of every job in this process: `weir/node` adds the one that publishes to diagnostics_channel. */
const listeners = new Set<(event: JobEvent) => void>();

/** Calls `listener` with every event of every job in this process until the returned function is called. */
export function onJobEvents(listener: (event: JobEvent) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * One running job's events: sent to the process's listeners and to the job's logger. A listener or logger that throws
 * never reaches the job (it is observation, not control).
 */
export class JobEvents {
  constructor(
    private readonly job: string,
    private readonly logger: JobLogger | undefined,
    checkpoints: Observable<CheckpointStats>,
  ) {
    checkpoints.subscribe((checkpoint) => {
      const { job } = this;
      if (checkpoint.status !== 'completed') this.emit({ type: 'checkpoint:failed', job, checkpoint, reason: checkpoint.reason ?? checkpoint.status });
      else this.emit(checkpoint.kind === 'savepoint' ? { type: 'savepoint', job, checkpoint } : { type: 'checkpoint:complete', job, checkpoint });
    });
  }

  emit(event: JobEvent): void {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // See the class comment: observers cannot fail the job.
      }
    }
    if (this.logger !== undefined) {
      try {
        log(this.logger, event);
      } catch {
        // As above.
      }
    }
  }
}

/** One log line per event, at the level an operator would want it: failures warn, routine checkpoints are debug. */
function log(logger: JobLogger, event: JobEvent): void {
  const { job } = event;
  switch (event.type) {
    case 'job:start':
      return logger.info({ job }, `job '${job}' started`);
    case 'restore':
      return logger.info({ job, checkpoint: event.restoredFrom.id, path: event.restoredFrom.path, restart: event.restart }, `job '${job}' restored ${event.restoredFrom.path}`);
    case 'restart':
      return logger.warn(
        { job, restarts: event.restarts, delayMs: event.delayMs, err: event.cause },
        `job '${job}' failed and restarts in ${event.delayMs} ms (restart ${event.restarts}): ${messageOf(event.cause)}`,
      );
    case 'checkpoint:complete':
      return logger.debug(summary(event.checkpoint, job), `job '${job}' completed checkpoint ${event.checkpoint.id}`);
    case 'checkpoint:failed':
      return logger.warn({ ...summary(event.checkpoint, job), reason: event.reason }, `job '${job}': ${event.checkpoint.kind} ${event.checkpoint.id} ${event.checkpoint.status}: ${event.reason}`);
    case 'savepoint':
      return logger.info(summary(event.checkpoint, job), `job '${job}' wrote savepoint ${event.checkpoint.path}`);
    case 'job:stop':
      if (event.error !== undefined) return logger.error({ job, err: event.error }, `job '${job}' failed: ${messageOf(event.error)}`);
      return logger.info({ job, status: event.result?.status, restarts: event.result?.restarts }, `job '${job}' ${event.result?.status ?? 'ended'}`);
  }
}

function summary(checkpoint: CheckpointStats, job: string): object {
  const { id, kind, status, path, durationMs, bytes, fullSize } = checkpoint;
  return { job, checkpoint: id, kind, status, path, durationMs, bytes, fullSize };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
