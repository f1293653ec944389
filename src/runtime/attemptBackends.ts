import { taskId } from '../checkpoint/coordinator.js';
import type { LoadedCheckpoint } from '../checkpoint/loadCheckpoint.js';
import type { QueryableStateRegistry } from '../query/queryableStateRegistry.js';
import type { OperatorWatermark, RecordTimestamp } from '../core/elements.js';
import type { GraphNode } from '../core/graph.js';
import type { JobGraph } from '../core/jobGraph.js';
import { keyGroupRangeFor } from '../core/keyGroups.js';
import type { KeyGroupRange, KeyedStateBackend, Scheduler, StateBackend, StateClock } from '../core/types.js';

export interface AttemptBackendsOptions {
  stateBackend: StateBackend;
  maxParallelism: number;
  scheduler: Scheduler;
  /** Whether the backends track their changes (incremental checkpoints); undefined without checkpointing. */
  trackChanges: boolean | undefined;
  /** Where every backend registers its states for queries. */
  queryable: QueryableStateRegistry;
  /** Each operator's current watermark, shared with its tasks. */
  watermarkOf: (uid: string) => OperatorWatermark;
  /** The event timestamp of the record being processed, shared with the attempt's operators. */
  record: RecordTimestamp;
  /** Whether subtask `index` of an operator runs on this thread (always, but with worker threads). */
  runsHere: (index: number) => boolean;
}

/**
 * The keyed state backends of one execution attempt: restored from the checkpoint before the graph is built, opened
 * by each stateful subtask with its declared states registered, registered for queries, and disposed with the attempt.
 */
export class AttemptBackends {
  private readonly backends: KeyedStateBackend[] = [];
  /** Keyed backends restored before the nodes are built, by task id. */
  private readonly restored = new Map<string, KeyedStateBackend>();

  constructor(private readonly options: AttemptBackendsOptions) {}

  /**
   * Creates and restores the keyed backend of every subtask that has keyed state in the checkpoint, before any node
   * is built (an operator may read its state as it is set up). Files are read one at a time and each payload handed
   * to the backends as it comes, so keyed state larger than memory is never loaded whole.
   */
  async restore(graph: JobGraph, restored: LoadedCheckpoint | undefined): Promise<void> {
    const { maxParallelism } = this.options;
    for (const node of graph.nodes) {
      const saved = restored?.states.get(node.uid);
      if (!saved?.hasKeyed) continue;
      const parallelism = node.parallelism ?? 1;
      const local = Array.from({ length: parallelism }, (_, index) => index).filter((index) => this.options.runsHere(index));
      if (local.length === 0) continue;
      const ranges = local.map((index) => keyGroupRangeFor(index, parallelism, maxParallelism));
      const backends = local.map((index, i) => {
        const backend = this.create(node.uid, ranges[i]!);
        this.restored.set(taskId(node.uid, index), backend);
        return backend;
      });
      // Only the files that hold key groups of the subtasks here (a worker thread runs some of them).
      for await (const payload of saved.keyed(ranges)) for (const backend of backends) backend.restore([payload]);
    }
  }

  /**
   * A subtask's keyed backend, restored if the checkpoint has state for it, with the states its operator declares
   * registered before any record, as Flink operators register their state in `open()`: a declared queryable state
   * answers queries from the start, and a restored one holds its values before the operator uses it again.
   */
  open(node: GraphNode, index: number, range: KeyGroupRange): KeyedStateBackend {
    const backend = this.restored.get(taskId(node.uid, index)) ?? this.create(node.uid, range);
    // After the restore: a state registered first would not take the restored entries.
    for (const descriptor of node.states ?? []) backend.getState(descriptor);
    return backend;
  }

  dispose(): void {
    this.backends.forEach((backend) => backend.dispose());
  }

  /** A subtask's keyed backend, registered for queries and disposed with the attempt. */
  private create(uid: string, range: KeyGroupRange): KeyedStateBackend {
    const { stateBackend, maxParallelism, queryable, trackChanges } = this.options;
    const backend = stateBackend.createKeyedBackend({
      uid,
      maxParallelism,
      keyGroupRange: range,
      clock: this.stateClock(uid),
      onStateRegistered: (descriptor) => queryable.register(uid, descriptor),
      trackChanges,
    });
    this.backends.push(backend);
    queryable.addBackend(uid, range, backend);
    return backend;
  }

  /**
   * The time state TTL reads in an operator: the job's scheduler, and the operator's watermark; before its first
   * watermark, event time is the timestamp of the record being processed (there is no better estimate yet).
   */
  private stateClock(uid: string): StateClock {
    const { scheduler, record } = this.options;
    const watermark = this.options.watermarkOf(uid);
    return {
      processingTime: () => scheduler.now(),
      eventTime: () => (watermark.current > Number.NEGATIVE_INFINITY ? watermark.current : (record.current ?? Number.NEGATIVE_INFINITY)),
    };
  }
}
