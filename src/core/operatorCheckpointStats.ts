/**
 * Per operator instance: where the time of a checkpoint went. Durations in ms, on the job's clock. A task reports it
 * with its acknowledgement and `_metadata` records it, so it sits below both.
 */
export interface OperatorCheckpointStats {
  readonly uid: string;
  readonly subtask: number;
  /** From the first barrier to the last at an operator with several inputs (0 for one input). */
  readonly alignmentMs: number;
  /** The synchronous capture on the processing path, the pause a barrier causes. */
  readonly syncMs: number;
  /** Materialising, encoding and writing the state, off the barrier's path. */
  readonly asyncMs: number;
  /** Bytes this operator persisted for this checkpoint. */
  readonly bytes: number;
  /** Records held back during alignment. */
  readonly heldRecords: number;
}
