/**
 * The plain counters one operator instance keeps for metrics, read only when metrics are collected. They are fields
 * of one class, so that every operator's increment hits the same hidden class; the hot path adds one to a field per
 * record and operator, nothing more (see OperatorChain: an operator's records out are the next chained operator's
 * records in, not counted twice).
 */
export class OperatorCounters {
  /** Records that reached the operator. */
  recordsIn = 0;
  /** Records the operator emitted, when nothing downstream counts them (see `countedBy`). */
  emitted = 0;
  /** The chained operator right after this one, whose records in are this one's records out. */
  countedBy: OperatorCounters | undefined = undefined;
  /** Set by a source's runner: only sources measure busy, idle and backpressured time. */
  source = false;
  /** Sources: ms the thread spent pushing this source's chunks through the operators chained behind it. */
  busyMs = 0;
  /** Sources: ms spent waiting for the source to have input. */
  idleMs = 0;
  /** Sources: ms spent paused because an operator could not take more records (backpressure). */
  backpressuredMs = 0;
  /** Sources whose reader knows it: records not read yet (see `SourceReader.lag`). */
  lag: (() => number | undefined) | undefined = undefined;

  get recordsOut(): number {
    return this.countedBy === undefined ? this.emitted : this.countedBy.recordsIn;
  }
}
