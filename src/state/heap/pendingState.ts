import type { RemovedEntry, StateMeta } from '../../core/types.js';

/**
 * Restored entries of a state nobody has asked for yet, kept as the payloads hold them (no map is built for them):
 * decoded straight into the state's tables when its descriptor is first used (`loadPendingState`).
 */
export interface PendingState {
  meta: StateMeta;
  /**
   * What each restored payload holds of the state, in restore order; a later one (a delta) replaces or removes
   * entries of the ones before. Never changed in place (a snapshot keeps the array it saw): a restore replaces it.
   */
  sources: readonly PendingSource[];
  /** Whether `sources` is one source with every key once and no removals (see `compactSources`). */
  compact: boolean;
}

/**
 * The entries and removals of one state in one payload, in this backend's key groups, keys and values as saved and
 * flat as payloads hold them (see `KeyedStatePayload.flat`): `flat` as `state, key, value` triples, `namespaced` as
 * `state, key, value, namespace` quadruples (`''` for no namespace), read in that order. The state index in them
 * is meaningless (the payload's). A payload of one state whose entries need no filtering lends its own arrays, so
 * that a restored state costs no copy and no array per entry until used.
 */
export interface PendingSource {
  readonly flat: readonly unknown[];
  readonly namespaced: readonly unknown[];
  readonly removed: readonly RemovedEntry[];
}

/**
 * A pending state's sources applied one after the other (entries, then removals, of each): one source holding the
 * entry of each key and namespace that remains, in first-written order, namespace by namespace (those without one
 * in `flat`).
 */
export function compactSources(sources: readonly PendingSource[]): PendingSource[] {
  // By namespace and key as saved: a bigint's `{ $bigint }` by its text (keys are not decoded: a snapshot passes them on as they are).
  const byNamespace = new Map<string, Map<unknown, [key: unknown, value: unknown]>>();
  const idOf = (key: unknown) => (key !== null && typeof key === 'object' ? `\u0000object:${JSON.stringify(key)}` : key);
  const tableOf = (namespace: string) => {
    let table = byNamespace.get(namespace);
    if (table === undefined) byNamespace.set(namespace, (table = new Map<unknown, [key: unknown, value: unknown]>()));
    return table;
  };
  for (const { flat, namespaced, removed } of sources) {
    if (flat.length > 0) {
      const table = tableOf('');
      for (let i = 0; i < flat.length; i += 3) table.set(idOf(flat[i + 1]), [flat[i + 1], flat[i + 2]]);
    }
    for (let i = 0; i < namespaced.length; i += 4) tableOf(namespaced[i + 3] as string).set(idOf(namespaced[i + 1]), [namespaced[i + 1], namespaced[i + 2]]);
    for (const [, key, namespace = ''] of removed) byNamespace.get(namespace)?.delete(idOf(key));
  }
  const flat: unknown[] = [];
  const namespaced: unknown[] = [];
  for (const [namespace, table] of byNamespace) {
    if (namespace === '') for (const [key, value] of table.values()) flat.push(0, key, value);
    else for (const [key, value] of table.values()) namespaced.push(0, key, value, namespace);
  }
  return flat.length === 0 && namespaced.length === 0 ? [] : [{ flat, namespaced, removed: [] }];
}
