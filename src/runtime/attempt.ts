import type { SavepointTarget } from '../checkpoint/coordinator.js';
import type { Key } from '../core/types.js';
import type { QueryableStateInfo, QueryableStateRegistry } from '../query/queryableStateRegistry.js';
import type { KeyPage, KeyPageOptions } from '../query/stateQueries.js';

/**
 * One attempt at running a job, as `RunningJob` drives it through restarts: an `Execution` on this thread, or the
 * workers of `startJob`. Restart strategy, restore selection, lock and periodic checkpoints stay the job's.
 */
export interface Attempt {
  /** Builds and starts the attempt; rejects when it cannot start (the attempt has failed then). */
  start(): Promise<void>;
  /** Settles when the attempt ends: resolves when every sink has finished, rejects with what failed it. */
  readonly done: Promise<void>;
  /** Graceful stop: sources stop reading, in-flight records drain, the final checkpoint (or `savepoint`) commits. */
  drain(savepoint?: SavepointTarget): void;
  /** Ends the attempt at once; settles once everything it ran is gone (worker threads terminated). */
  cancel(reason: unknown): void | Promise<void>;
  /** The attempt's queryable states. */
  readonly queryable: QueryableStateRegistry;
  /**
   * A query answered by the threads that hold the state (worker threads), live or `asOf` a checkpoint; without it,
   * `queryable` answers. Resolves with `known: false` when no thread has a state of that name.
   */
  query?(name: string, key: Key, asOf?: number): Promise<{ known: boolean; value: unknown }>;
  /** The queryable states the threads that hold them have registered (worker threads); without it, `queryable` lists them. */
  queryableStates?(): QueryableStateInfo[];
  /** A page of a state's keys from the threads that hold it, as `query`. */
  queryKeys?(name: string, options: KeyPageOptions): Promise<{ known: boolean; page: KeyPage }>;
}
