import { JobDefinitionError } from './errors.js';
import type { GraphNode } from './graph.js';

export type NodeSpec = Omit<GraphNode, 'id' | 'uid'> & {
  /** Operator name, used for the generated uid. */
  readonly kind: string;
  readonly uid?: string;
};

/**
 * The dataflow graph of a job, built while flows are piped. Nodes are appended in creation order, which is a
 * topological order: a node's inputs always exist before it.
 */
/** The longest uid, URI-encoded, whose state file names fit in 255 bytes with their suffix. */
const MAX_ENCODED_UID = 200;

export class JobGraph {
  readonly nodes: GraphNode[] = [];
  private readonly uids = new Set<string>();
  private frozen = false;

  constructor(
    readonly jobName: string,
    /** Instances of keyed operators that do not say otherwise. */
    readonly defaultParallelism = 1,
  ) {}

  /**
   * Adds a node. Without a uid it gets `<kind>-<position>`: deterministic for an unchanged job, but it shifts when
   * operators are added or removed before it, and then its saved state no longer maps to it. Stateful operators
   * should be given a uid.
   */
  add(spec: NodeSpec): GraphNode {
    if (this.frozen) {
      throw new JobDefinitionError(`job '${this.jobName}' has started; its graph cannot change (add operators before job.start())`);
    }
    const id = this.nodes.length;
    const uid = spec.uid ?? `${spec.kind}-${id}`;
    if (typeof uid !== 'string' || uid.length === 0) throw new JobDefinitionError(`job '${this.jobName}': a uid must be a non-empty string`);
    if (this.uids.has(uid)) throw new JobDefinitionError(`job '${this.jobName}': uid '${uid}' is used twice; every operator needs its own uid`);
    // State files are named `<uid>.<subtask>.kg-<start>-<end>.<n>` (the uid URI-encoded): with room for the rest,
    // the name stays within the 255 bytes file systems allow, so that a checkpoint can always be written and read.
    if (encodeURIComponent(uid).length > MAX_ENCODED_UID) {
      throw new JobDefinitionError(
        `job '${this.jobName}': uid '${uid.slice(0, 40)}…' is too long: ${encodeURIComponent(uid).length} characters once URI-encoded for its state file names, ` +
          `at most ${MAX_ENCODED_UID}; use a shorter uid`,
      );
    }
    for (const input of spec.inputs) {
      if (!this.nodes.includes(input)) {
        throw new JobDefinitionError(`job '${this.jobName}': operator '${uid}' reads a flow of another job; flows cannot cross jobs`);
      }
    }
    this.uids.add(uid);
    const created: GraphNode = { ...spec, id, uid };
    this.nodes.push(created);
    return created;
  }

  freeze(): void {
    this.frozen = true;
  }

  /** The nodes that read each node's output. */
  consumers(): Map<GraphNode, GraphNode[]> {
    const consumers = new Map<GraphNode, GraphNode[]>(this.nodes.map((node) => [node, []]));
    for (const node of this.nodes) for (const input of node.inputs) consumers.get(input)!.push(node);
    return consumers;
  }
}
