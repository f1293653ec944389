/**
 * Every error weir throws on purpose is a `WeirError` subclass, exported so callers can branch on it. Messages say
 * what happened, to what (job, uid, state, file) and what to do about it.
 *
 * Each class spells its `name` out rather than reading `new.target.name`: a minifier (weir's build, or the user's
 * bundler) renames classes, and `CheckpointCorruptedError: …` would print as `l: …`.
 */
export class WeirError extends Error {
  override name = 'WeirError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Keyed state was used where no key is current: outside a keyed operator, or outside record processing. */
export class NoKeyedContextError extends WeirError {
  override name = 'NoKeyedContextError';
}

/** A state name was registered twice in one operator with a different kind or serializer. */
export class StateDescriptorConflictError extends WeirError {
  override name = 'StateDescriptorConflictError';
}

/** Restored state does not fit the descriptor that reads it (another kind or serializer). */
export class StateMigrationError extends WeirError {
  override name = 'StateMigrationError';
}

/** `null` or `undefined` added to a list, reducing, aggregating or map state. */
export class NullStateValueError extends WeirError {
  override name = 'NullStateValueError';
}

/** A key selector returned something that is not a string, number, boolean or bigint. */
export class InvalidKeyError extends WeirError {
  override name = 'InvalidKeyError';
}

/**
 * A job definition is not valid (duplicate uid, bad option, operator applied to the wrong flow). Found while a job
 * runs, it fails the job at once: the restart strategy does not retry it, since every attempt would meet it again.
 */
export class JobDefinitionError extends WeirError {
  override name = 'JobDefinitionError';
}

/**
 * A worker thread of a job started with `startJob` failed: a user function threw there, the thread had an uncaught
 * error, or it exited (even by `process.exit` in a user function). `cause` carries the original error's name,
 * message and stack. The attempt fails, and the job restarts as its restart strategy allows.
 */
export class WorkerFailedError extends WeirError {
  override name = 'WorkerFailedError';

  constructor(
    message: string,
    /** The index of the worker that failed. */
    readonly worker: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A source that cannot resume at an offset was asked to restore from a checkpoint. */
export class NonReplayableSourceError extends WeirError {
  override name = 'NonReplayableSourceError';
}

/** A checkpoint or file that was asked for does not exist. */
export class CheckpointNotFoundError extends WeirError {
  override name = 'CheckpointNotFoundError';
}

/** A persisted file failed its format, version or checksum check. */
export class CheckpointCorruptedError extends WeirError {
  override name = 'CheckpointCorruptedError';
}

/** A checkpoint belongs to another job. */
export class ForeignCheckpointError extends WeirError {
  override name = 'ForeignCheckpointError';
}

/** A snapshot is larger than the checkpoint storage accepts (Flink's memory state backend limit). */
export class StateSizeExceededError extends WeirError {
  override name = 'StateSizeExceededError';
}

/** Saved state names operators the job does not have, and the restore did not allow dropping it. */
export class NonRestoredStateError extends WeirError {
  override name = 'NonRestoredStateError';
  /** The checkpoint or savepoint that holds the state, and the uids it holds state for that the job lacks. */
  readonly checkpoint?: string;
  readonly uids: readonly string[];

  constructor(message: string, details: { checkpoint?: string; uids?: readonly string[]; cause?: unknown } = {}) {
    super(message, { cause: details.cause });
    this.checkpoint = details.checkpoint;
    this.uids = details.uids ?? [];
  }
}

/** A checkpoint was aborted before it completed (the job failed, stopped or was cancelled). */
export class CheckpointAbortedError extends WeirError {
  override name = 'CheckpointAbortedError';
}

/** A record could not be parsed by a source (malformed line, bad JSON). */
export class MalformedRecordError extends WeirError {
  override name = 'MalformedRecordError';
}

/**
 * A connector's server refused an operation or did not answer (a publish not acknowledged, a stream that does not
 * exist). The message names the server's resource (stream, subject, table), never the URL or credentials.
 */
export class ConnectorError extends WeirError {
  override name = 'ConnectorError';
}

/** The input a source reads does not exist (a missing file). */
export class SourceNotFoundError extends WeirError {
  override name = 'SourceNotFoundError';
}

/** A file a source reads or a sink writes changed since the checkpoint being restored (truncated, replaced or deleted). */
export class FileChangedError extends WeirError {
  override name = 'FileChangedError';
}

/**
 * A checkpoint storage ran out of space (the browser's IndexedDB quota, say). The write that hit the limit left
 * nothing behind, and the checkpoints completed before it are intact and restorable.
 */
export class StorageQuotaExceededError extends WeirError {
  override name = 'StorageQuotaExceededError';
}

/**
 * The file system refused a checkpoint, lock or output file: it is read-only, or this process lacks permission. The
 * message names the file and the real cause (`cause` keeps the system error); what was written before is intact.
 */
export class StorageAccessError extends WeirError {
  override name = 'StorageAccessError';
}

/** More checkpoints failed in a row than `checkpoints.tolerableFailures` allows. */
export class CheckpointFailuresExceededError extends WeirError {
  override name = 'CheckpointFailuresExceededError';
}

/**
 * Another running job holds the lock of this job's checkpoint directory (same storage, same job name): two writers
 * would delete each other's checkpoints. A lock whose process died, or whose heartbeat stopped, is taken over.
 */
export class CheckpointDirectoryLockedError extends WeirError {
  override name = 'CheckpointDirectoryLockedError';
}

/**
 * A scale-out member lost a key group it owned: another member claimed it after this one's lease ran out (the process
 * was paused, or cut off from the server), so this member's write with its stale fencing token was refused. Nothing
 * it wrote after the takeover was accepted; it stopped itself. Start the process again to rejoin.
 */
export class OwnershipLostError extends WeirError {
  override name = 'OwnershipLostError';
}

/**
 * A scale-out group's savepoint did not complete: key groups no member answered for in time (their owner died, or the
 * group has no members), or whose task could not take its savepoint. The message names them; the savepoint's
 * directory has no `_group-savepoint` manifest, so no group starts from it. Check the members and ask again.
 */
export class GroupSavepointError extends WeirError {
  override name = 'GroupSavepointError';
}

/**
 * A scale-out task read a record whose key belongs to another key group than the partition it came from: its
 * producer placed it by another hash, so its state would land with the wrong owner. Publish each record to the
 * partition of its key's key group (`keyGroupPartitions(...).byKey`, or weir's `keyGroupOf` in a foreign producer).
 */
export class PartitionMismatchError extends WeirError {
  override name = 'PartitionMismatchError';
}

/** A state value cannot be turned into its snapshot form by its serializer (superjson refuses `__proto__` keys, say). */
export class StateSerializationError extends WeirError {
  override name = 'StateSerializationError';
}

/**
 * A user function threw (a map, filter or key selector, a reduce, fold, aggregate, process or window function, a
 * timer callback, a sink's callback, a source's iterator): the error names the operator's uid and the job, and the
 * value thrown is its `cause`, unchanged (`error.cause instanceof TypeError`). weir's own typed errors
 * (`InvalidKeyError`, `StateMigrationError`, …) are not wrapped: their class is what callers branch on.
 */
export class UserFunctionError extends WeirError {
  override name = 'UserFunctionError';
  /** The uid of the operator whose function threw. */
  readonly uid: string;
  /** The job it ran in. */
  readonly job: string;

  constructor(where: { job: string; uid: string; operator: string }, cause: unknown) {
    const thrown = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(`operator '${where.uid}' (${where.operator}) of job '${where.job}' failed: ${thrown}; the thrown error is this error's cause`, { cause });
    this.uid = where.uid;
    this.job = where.job;
  }
}

/**
 * An RxJS operator in a weir pipeline emitted a record later than the input record it came from (`delay`,
 * `debounceTime`, `mergeMap` of a promise, `bufferTime`): weir cannot place such a record on the right side of a
 * checkpoint barrier, so the attempt fails before it reaches downstream. A definition error: the job fails at once,
 * without restarts. The message names the operator and the weir way (`mapAsync`, windows, `process` timers).
 */
export class AsynchronousOperatorError extends JobDefinitionError {
  override name = 'AsynchronousOperatorError';
}

/**
 * In development mode, an RxJS operator in a weir pipeline gave for a record another output than a fresh instance of
 * it given that record alone: its output depends on earlier records (`scan`, `bufferCount`, `distinct`, `take`) or it
 * emits at subscribe or completion (`startWith`, rxjs `reduce`), state kept in its closure that no checkpoint holds.
 * A definition error: the job fails at once, without restarts. The message names the weir operator that keeps such
 * state in checkpoints, and `uncheckpointed(…)`, which accepts losing it.
 */
export class UncheckpointedStateError extends JobDefinitionError {
  override name = 'UncheckpointedStateError';
}

/**
 * A `mapAsync` call did not settle within its `timeout` (Flink's async I/O TimeoutException): the message names the
 * operator, the job and which record of the attempt it was. Give `onTimeout` a fallback result, or raise `timeout`.
 */
export class AsyncTimeoutError extends WeirError {
  override name = 'AsyncTimeoutError';
}

/**
 * An entry of a broker stream (a Redis stream, say) that the source cannot turn into a record: its parse function
 * threw, or its event-time field is missing or not a time. The message names the stream, the entry id and the split;
 * give the source a `deadLetter` function to send such entries on with their reason instead of failing the job.
 */
export class MalformedStreamEntryError extends MalformedRecordError {
  override name = 'MalformedStreamEntryError';
  /** The stream (key), the entry's id in it, and the id of the source split that read it. */
  readonly stream: string;
  readonly id: string;
  readonly split: string;

  /** `where` is optional so that the class can be made from a message alone, as every weir error can. */
  constructor(message: string, where?: { stream: string; id: string; split: string; cause?: unknown }) {
    super(message, { cause: where?.cause });
    this.stream = where?.stream ?? '';
    this.id = where?.id ?? '';
    this.split = where?.split ?? '';
  }
}

/**
 * The `code` of a Node system error (`ENOENT`, …), or undefined.
 * @example if (errorCode(error) === 'ENOENT') return []
 */
export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}
