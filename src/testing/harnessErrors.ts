import { WeirError } from '../core/errors.js';

/**
 * A test drove the harness in a way no job could produce: a record with a non-finite timestamp, a watermark that
 * goes backwards, an input that does not exist, a checkpoint id used twice, processing time set back.
 */
export class HarnessInputError extends WeirError {
  override name = 'HarnessInputError';
}

/**
 * A snapshot was restored into a fragment that does not match it: operators (uids) the fragment lacks, or another
 * `maxParallelism`. (A state read under another kind or serializer fails with `StateMigrationError`, as in a job.)
 */
export class SnapshotMismatchError extends WeirError {
  override name = 'SnapshotMismatchError';
}
