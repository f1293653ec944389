/**
 * Every error weir throws on purpose is a `WeirError` subclass, exported so callers can branch on it. Messages say
 * what happened, to what (job, uid, state, file) and what to do about it.
 */
export class WeirError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Keyed state was used where no key is current: outside a keyed operator, or outside record processing. */
export class NoKeyedContextError extends WeirError {}

/** A state name was registered twice in one operator with a different kind or serializer. */
export class StateDescriptorConflictError extends WeirError {}

/** Restored state does not fit the descriptor that reads it (another kind or serializer). */
export class StateMigrationError extends WeirError {}

/** `null` or `undefined` added to a list, reducing, aggregating or map state. */
export class NullStateValueError extends WeirError {}

/** A key selector returned something that is not a string, number, boolean or bigint. */
export class InvalidKeyError extends WeirError {}

/** A job definition is not valid (duplicate uid, bad option, operator applied to the wrong flow). */
export class JobDefinitionError extends WeirError {}

/** A source that cannot resume at an offset was asked to restore from a checkpoint. */
export class NonReplayableSourceError extends WeirError {}

/** A checkpoint or file that was asked for does not exist. */
export class CheckpointNotFoundError extends WeirError {}

/** A persisted file failed its format, version or checksum check. */
export class CheckpointCorruptedError extends WeirError {}

/** A checkpoint belongs to another job. */
export class ForeignCheckpointError extends WeirError {}

/** A snapshot is larger than the checkpoint storage accepts (Flink's memory state backend limit). */
export class StateSizeExceededError extends WeirError {}

/** Saved state names operators the job does not have, and the restore did not allow dropping it. */
export class NonRestoredStateError extends WeirError {}

/** A checkpoint was aborted before it completed (the job failed, stopped or was cancelled). */
export class CheckpointAbortedError extends WeirError {}

/** A record could not be parsed by a source (malformed line, bad JSON). */
export class MalformedRecordError extends WeirError {}

/** The input a source reads does not exist (a missing file). */
export class SourceNotFoundError extends WeirError {}

/** A file a source reads or a sink writes changed since the checkpoint being restored (truncated, replaced or deleted). */
export class FileChangedError extends WeirError {}

/**
 * A checkpoint storage ran out of space (the browser's IndexedDB quota, say). The write that hit the limit left
 * nothing behind, and the checkpoints completed before it are intact and restorable.
 */
export class StorageQuotaExceededError extends WeirError {}

/**
 * The file system refused a checkpoint, lock or output file: it is read-only, or this process lacks permission. The
 * message names the file and the real cause (`cause` keeps the system error); what was written before is intact.
 */
export class StorageAccessError extends WeirError {}

/** More checkpoints failed in a row than `checkpoints.tolerableFailures` allows. */
export class CheckpointFailuresExceededError extends WeirError {}

/**
 * Another running job holds the lock of this job's checkpoint directory (same storage, same job name): two writers
 * would delete each other's checkpoints. A lock whose process died, or whose heartbeat stopped, is taken over.
 */
export class CheckpointDirectoryLockedError extends WeirError {}

/** A state value cannot be turned into its snapshot form by its serializer (superjson refuses `__proto__` keys, say). */
export class StateSerializationError extends WeirError {}
