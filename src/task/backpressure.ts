import type { Backpressure } from '../core/graph.js';

/**
 * The attempt's backpressure: one per attempt, shared by every task. An operator that holds records it cannot
 * process yet (mapAsync at capacity) raises it; the sources pause between chunks until every raise is released, so
 * what piles up is at most one chunk per source. Barriers and cancellation markers still go in while sources pause
 * (see SourceRunner), so checkpoints are not held back by a full operator. weir has no credit-based flow control
 * between tasks as Flink has: every task shares one thread, so pausing the sources is enough to bound memory.
 */
export class AttemptBackpressure implements Backpressure {
  private raised = 0;
  private waiters: (() => void)[] = [];

  raise(): () => void {
    this.raised++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.raised === 0) this.waiters.splice(0).forEach((wake) => wake());
    };
  }

  /** Settles once nothing holds the sources back; undefined when nothing does now. */
  released(): Promise<void> | undefined {
    if (this.raised === 0) return undefined;
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}
