import type { OperatorCounters } from './operatorCounters.js';
import type { Observable } from 'rxjs';
import type { CheckpointBarrier, OperatorWatermark, RecordTimestamp, StreamElement } from './elements.js';
import type { AnyStateDescriptor, Json, KeyGroupRange, KeyedSnapshot, KeyedStateBackend, Key, Scheduler, Sink, Source } from './types.js';

/** `exactly-once` aligns barriers by holding records; `at-least-once` snapshots when the last barrier arrives. */
export type CheckpointMode = 'exactly-once' | 'at-least-once';

/** What a node of the graph is to checkpoints: where records enter, an operator between, or where they leave. */
export type OperatorRole = 'source' | 'operator' | 'sink';

/** What a node's runtime gets from the job for one attempt: its identity, state and the checkpoint hooks. */
export interface TaskContext {
  readonly uid: string;
  readonly job: string;
  readonly scheduler: Scheduler;
  readonly checkpointing: boolean;
  /** The event timestamp of the record being processed, shared by the whole attempt. */
  readonly record: RecordTimestamp;
  /** This operator's current watermark, shared by its instances; the operator runtime sets it as watermarks arrive. */
  readonly watermark: OperatorWatermark;
  readonly maxParallelism: number;
  /** The key groups this instance owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** Which parallel instance this is, of `parallelism`. */
  readonly subtaskIndex: number;
  /**
   * Whether this instance runs on this thread: always on one thread; with worker threads, each instance runs in one
   * worker, and the others build the operator without it (its records go to the worker that runs it).
   */
  readonly runsHere: boolean;
  readonly parallelism: number;
  /** Operator state this task saved in the checkpoint being restored. */
  readonly restoredOperatorState: Json | undefined;
  /**
   * Operator state every instance of this operator saved, whatever the parallelism then: keyed operators take from
   * it what belongs to their key groups (timers), so that a job restored at another parallelism loses nothing.
   */
  readonly restoredOperatorStates: Json[];
  /** The context of parallel instance `index` of this operator. */
  subtask(index: number): TaskContext;
  /** The task's keyed state backend, created (and restored) on first use. */
  keyedBackend(): KeyedStateBackend;
  /**
   * Barrier handling for a stateful task: captures state synchronously, lets the barrier go on, then persists
   * the capture in the background and acknowledges it to the checkpoint coordinator.
   */
  snapshot(barrier: CheckpointBarrier, capture: () => SnapshotCapture, forward: () => void, alignment?: AlignmentStats): void;
  /**
   * This task will not acknowledge checkpoint `id`: the newer checkpoint `by` overtook its alignment (subsumed). The
   * coordinator aborts it at once instead of waiting for its timeout.
   */
  decline(id: number, by: number): void;
  /** Runs `callback` once every node is wired, before the sources start (to replay saved in-flight records). */
  beforeSources(callback: () => void): void;
  /** How checkpoints align at operators with several inputs. */
  readonly alignment: { mode: CheckpointMode; alignedTimeout: number | undefined };
  /** Slows the attempt's sources while this task holds records it cannot process yet (shared by the attempt). */
  readonly backpressure: Backpressure;
  /** Where this instance counts records for metrics; absent when nothing reads them (the test harness). */
  readonly counters?: OperatorCounters;
}

/**
 * Lets a task pause the attempt's sources between chunks (an async operator at capacity). `raise` returns the
 * release; the sources read on once every raise is released.
 */
export interface Backpressure {
  raise(): () => void;
}

/** What a task captures synchronously at a barrier: its keyed snapshot and its operator state (or a promise of it). */
export interface SnapshotCapture {
  keyed?: KeyedSnapshot;
  operator?: Json | Promise<Json | undefined>;
}

/** How long an operator with several inputs aligned, and how many records it held meanwhile. */
export interface AlignmentStats {
  alignmentMs: number;
  heldRecords: number;
}

/** The parts of a graph node the runtime builds for each attempt; data flows from `inputs` to the node. */
export interface GraphNode {
  readonly id: number;
  readonly uid: string;
  /** What made the node (`source`, `keyBy`, `reduce`, `window`, …), for views of the graph. */
  readonly kind?: string;
  readonly role: OperatorRole;
  /** Acknowledges every checkpoint with a state file (sources, keyed operators, sinks). */
  readonly stateful: boolean;
  readonly inputs: readonly GraphNode[];
  /** Parallel instances (keyed operators), each owning a contiguous range of key groups; 1 by default. */
  readonly parallelism?: number;
  /** Keyed states the operator declares up front (`process(fn, { states })`), registered as each instance starts. */
  readonly states?: readonly AnyStateDescriptor[];
  /**
   * The key of a keyed one-input operator's records: with worker threads, records cross to the worker that runs
   * their key's instance before the operator reads them.
   */
  readonly keySelector?: KeySelector<never>;
  readonly source?: Source<unknown>;
  /**
   * A source's watermark strategy (`job.source(src, { watermarks })`): its subtasks give records their timestamps and
   * generate watermarks per split. Typed loosely here: the time floor above gives it its shape.
   */
  readonly watermarks?: { timestamp: (value: never) => number };
  readonly sink?: Sink<unknown>;
  /** Builds the node's observable for one attempt from its inputs' (not used for sources, which the job drives). */
  build?(task: TaskContext, inputs: Observable<StreamElement<unknown>>[]): Observable<StreamElement<unknown>>;
}

/** Extracts the key of a record; recorded on keyed flows and applied by the keyed operator that follows. */
export type KeySelector<T> = (value: T) => Key;
