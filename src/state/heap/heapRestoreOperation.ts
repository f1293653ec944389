import type { Key, KeyGroupRange, KeyedStatePayload, RemovedEntry } from '../../core/types.js';
import { decodeKey } from '../keyCodec.js';
import { forEachPayloadEntry, unbucketedInRange } from '../payloadEntries.js';
import { rowEntriesFrom } from '../shapedEntries.js';
import { checkKeyType, checkRestoredMeta, encodedKeyType, plainValuesAsIs, restoredDecoder, undeclaredState } from '../stateChecks.js';
import type { PendingSource, PendingState } from './pendingState.js';
import type { StateFamily } from './stateFamily.js';

/**
 * Restores a heap backend (Flink's HeapRestoreOperation): keeps the entries of the backend's key groups as pending,
 * by state, and decodes a state's entries into its tables only when its descriptor is first used (`load`).
 */
export class HeapRestoreOperation {
  constructor(
    private readonly uid: string,
    private readonly maxParallelism: number,
    private readonly range: KeyGroupRange,
  ) {}

  /** Adds what `payloads` hold of this backend's key groups to `pending`; nothing is decoded (nor put in a map). */
  restore(payloads: readonly KeyedStatePayload[], pending: Map<string, PendingState>): void {
    for (const payload of payloads) {
      const declared = payload.states.length;
      const lent = lentSource(payload, this.range, this.uid);
      const entries: unknown[][] = [];
      const removals: RemovedEntry[][] = [];
      if (lent === undefined) {
        // Copied, in the order read: quadruples (see `PendingSource`), whatever the entry's form.
        forEachPayloadEntry(payload, { maxParallelism: this.maxParallelism, range: this.range }, (entry) => {
          const index = entry[0];
          let list = entries[index];
          if (list === undefined) {
            if (!(index < declared)) throw undeclaredState(this.uid, index);
            entries[index] = list = [];
          }
          list.push(index, entry[1], entry[2], entry[3] ?? '');
        });
      }
      for (const [keyGroup, removed] of payload.removed ?? []) {
        if (keyGroup < this.range.start || keyGroup > this.range.end) continue;
        for (const entry of removed) {
          const index = entry[0];
          if (!(index < declared)) throw undeclaredState(this.uid, index);
          (removals[index] ??= []).push(entry);
        }
      }
      for (let index = 0; index < declared; index++) {
        const own = lent !== undefined && index === 0 ? lent : undefined;
        if (own === undefined && entries[index] === undefined && removals[index] === undefined) continue;
        const meta = payload.states[index]!;
        const source: PendingSource = { flat: own?.flat ?? [], namespaced: own?.namespaced ?? entries[index] ?? [], removed: removals[index] ?? [] };
        const state = pending.get(meta.name);
        if (state === undefined) pending.set(meta.name, { meta, sources: [source], compact: false });
        else {
          state.sources = [...state.sources, source];
          state.compact = false;
        }
      }
    }
  }

  /**
   * Decodes a restored state's entries into its tables, payload by payload (removals after the entries of each);
   * `currentKey`, when a record is being processed, is checked against the restored keys' type.
   */
  load(family: StateFamily<unknown>, restored: PendingState, currentKey: Key | undefined): void {
    const { meta } = restored;
    const descriptor = family.descriptor;
    checkRestoredMeta(this.uid, meta, descriptor);
    const decode = restoredDecoder(meta, descriptor);
    const rowsAsIs = plainValuesAsIs(meta, descriptor);
    const keyTypes = new Set<string>();
    let lastType = '';
    let namespace = '';
    let live = family.write('').live;
    for (const { flat, namespaced, removed } of restored.sources) {
      if (flat.length > 0 && namespace !== '') live = family.write((namespace = '')).live;
      // Values built from rows need no decoding (see `rowEntriesFrom`): the entries from `rows` on.
      const rows = rowsAsIs ? rowEntriesFrom(flat) : flat.length;
      for (let i = 1; i < flat.length; i += 3) {
        const key = flat[i];
        const type = encodedKeyType(key);
        if (type !== lastType) keyTypes.add((lastType = type));
        live.set(decodeKey(key), i < rows ? decode(flat[i + 1]) : flat[i + 1]);
      }
      for (let i = 1; i < namespaced.length; i += 4) {
        const key = namespaced[i];
        const type = encodedKeyType(key);
        if (type !== lastType) keyTypes.add((lastType = type));
        const entryNamespace = namespaced[i + 2] as string;
        if (entryNamespace !== namespace) live = family.write((namespace = entryNamespace)).live;
        live.set(decodeKey(key), decode(namespaced[i + 1]));
      }
      for (const [, key, removedNamespace = ''] of removed) {
        const table = family.read(removedNamespace);
        if (table.live.delete(decodeKey(key))) family.release(removedNamespace, table);
      }
    }
    if (currentKey !== undefined) checkKeyType(this.uid, descriptor.name, keyTypes, currentKey);
  }
}

/**
 * The entries of a payload of one state, all unbucketed and in `range` by the payload's own range, as its own arrays
 * (checked to name that state): what `restore` keeps without copying. Undefined for any other payload, and for one
 * without such entries.
 */
function lentSource(payload: KeyedStatePayload, range: KeyGroupRange, uid: string): Pick<PendingSource, 'flat' | 'namespaced'> | undefined {
  if (payload.states.length !== 1 || unbucketedInRange(payload, range) !== 'all') return undefined;
  for (const [keyGroup, entries] of payload.keyGroups) if (entries.length > 0 && keyGroup >= range.start && keyGroup <= range.end) return undefined;
  const flat = payload.flat ?? [];
  const namespaced = payload.flatNamespaced ?? [];
  // As `forEachPayloadEntry` reads them: whole entries only.
  if (flat.length % 3 !== 0 || namespaced.length % 4 !== 0) return undefined;
  for (let i = 0; i < flat.length; i += 3) if (flat[i] !== 0) throw undeclaredState(uid, flat[i] as number);
  for (let i = 0; i < namespaced.length; i += 4) if (namespaced[i] !== 0) throw undeclaredState(uid, namespaced[i] as number);
  return flat.length === 0 && namespaced.length === 0 ? undefined : { flat, namespaced };
}
