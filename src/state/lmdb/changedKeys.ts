import type { Key } from '../../core/types.js';

/**
 * The user keys of one state written since the last snapshot, by namespace: what an incremental checkpoint rewrites
 * of that state (Flink's RocksDB backend diffs SST files instead; rows are per key here, so the keys are the delta).
 */
export class ChangedKeys {
  private byNamespace = new Map<string, Set<Key>>();

  add(namespace: string, keys: Iterable<Key>): void {
    let changed = this.byNamespace.get(namespace);
    if (changed === undefined) this.byNamespace.set(namespace, (changed = new Set()));
    for (const key of keys) changed.add(key);
  }

  /** The keys added since the last call, by namespace; starts over empty. */
  take(): Map<string, Set<Key>> {
    const taken = this.byNamespace;
    this.byNamespace = new Map();
    return taken;
  }
}
