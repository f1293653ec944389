import type { Json } from './values.js';

/** Writes the records that reach a sink for one attempt of a job. */
export interface SinkWriter<T> {
  write(value: T): void;
  /**
   * Checkpoint barrier: make what was written since the last barrier durable but not yet visible (pre-commit) and
   * return the state to store in the checkpoint; `open` receives it back on restore.
   */
  snapshot?(checkpointId: number): Json | Promise<Json>;
  /** The checkpoint completed: make its writes visible. */
  commit?(checkpointId: number): void | Promise<void>;
  /** End of input: flush and make everything visible. */
  finish(): void | Promise<void>;
  /** The attempt failed: discard what is not committed. */
  abort(): void | Promise<void>;
}

/** Where records leave weir. Transactional sinks implement `snapshot`/`commit` on their writers. */
export interface Sink<T> {
  readonly name: string;
  /** `job` names the running job, for sinks that key their progress in an external system by job and uid. */
  open(context: { uid: string; restoredState: Json | undefined; checkpointing: boolean; job?: string }): SinkWriter<T> | Promise<SinkWriter<T>>;
  /** The job ended: `error` is why it failed for good, undefined when it finished, stopped or was cancelled. */
  ended?(error: unknown): void;
}
