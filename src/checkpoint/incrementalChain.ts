import type { CheckpointMetadata, StateFileEntry } from '../storage/layout.js';

/**
 * The last checkpoint of an incremental chain, as the next delta builds on it: its keyed files (each with the
 * checkpoint that holds it), its length in deltas, and the bytes of its base and of its deltas.
 */
export interface Chain {
  readonly id: number;
  readonly files: Map<string, StateFileEntry[]>;
  readonly deltas: number;
  readonly baseBytes: number;
  readonly deltaBytes: number;
}

/** Where a checkpoint starts from in the chain: the chain it builds on (none for a full one) and the chain's epoch. */
export interface ChainPosition {
  readonly base: Chain | undefined;
  readonly epoch: number;
}

/**
 * An operator's files in a checkpoint started at `position`: a delta's new files first (the first carries the
 * operator state), then the chain's, which it reuses.
 */
export function filesOnChain(position: ChainPosition, uid: string, files: StateFileEntry[], delta: boolean): StateFileEntry[] {
  return position.base && delta ? [...files, ...(position.base.files.get(uid) ?? [])] : files;
}

/**
 * Which keyed files incremental checkpoints reuse (Flink's incremental checkpoints, with files referenced in place):
 * a delta persists only what changed since the chain's head and lists the head's files for the rest.
 */
export class IncrementalChain {
  /**
   * Where the next incremental checkpoint builds on; undefined when the next one must be full: at the start of an
   * attempt (its backends start tracking changes afresh), after a failed or aborted checkpoint or a savepoint (their
   * snapshots consumed changes that no retained checkpoint holds), and past `fullEvery`.
   */
  private head: Chain | undefined;
  /** Counts resets. */
  private epoch = 0;

  /** `fullEvery` undefined: checkpoints are never incremental. */
  constructor(private readonly fullEvery: number | undefined) {}

  /** The next checkpoint is full, and none in flight may become the chain's head. */
  reset(): void {
    this.head = undefined;
    this.epoch++;
  }

  /**
   * Where a checkpoint triggered now starts, `inFlight` others being in flight. A delta only on top of the checkpoint
   * completed last with nothing in flight (a delta is relative to the previous snapshot), while the chain is short and
   * its deltas smaller than its base, so restores stay bounded. A savepoint is full and resets the chain.
   */
  start(savepoint: boolean, inFlight: number): ChainPosition {
    const chain = this.head;
    const fullEvery = this.fullEvery ?? 1;
    const delta = !savepoint && chain !== undefined && inFlight === 0 && chain.deltas + 1 < fullEvery && chain.deltaBytes < chain.baseBytes;
    if (savepoint) this.reset();
    return { base: delta ? chain : undefined, epoch: this.epoch };
  }

  /**
   * Checkpoint `id`, started at `position`, completed with `operators` (`bytes` of its own). The head of a chain is
   * the checkpoint whose snapshot was taken last (`newest`): the backends' changes run from there.
   */
  completed(id: number, position: ChainPosition, operators: CheckpointMetadata['operators'], bytes: number, newest: boolean): void {
    if (this.fullEvery === undefined || !newest || position.epoch !== this.epoch) return;
    const chain = position.base;
    const files = new Map(operators.map(({ uid, files }) => [uid, files.filter((entry) => entry.keyGroups !== null).map((entry) => ({ ...entry, checkpoint: entry.checkpoint ?? id }))]));
    this.head = chain
      ? { id, files, deltas: chain.deltas + 1, baseBytes: chain.baseBytes, deltaBytes: chain.deltaBytes + bytes }
      : { id, files, deltas: 0, baseBytes: bytes, deltaBytes: 0 };
  }
}
