import superjson from 'superjson';
import type { CheckpointStorage, Key } from '../core/types.js';
import { decodeKey } from '../state/keyCodec.js';
import { forEachPayloadEntry } from '../state/payloadEntries.js';
import { readSavepoint } from '../stateProcessor/readSavepoint.js';
import { storedValueDecoder, type StoredValue } from '../stateProcessor/serializerById.js';

/**
 * The keyed state a checkpoint or savepoint holds, decoded without the job's code: every entry of every state of
 * every operator, with its value turned back into what the job stored (Date, Map, Set and BigInt included) for the
 * serializers weir ships, and a TTL state's value apart from its access times. Backs the visual inspector's key
 * browser and diff; `readCheckpoint.ts` has the summaries.
 */

/**
 * One key's value of one state (in one window, for windowed state): the decoded value, or the stored form when the
 * serializer is not one weir ships (`decoded: false`), and for a TTL state its `lastAccess` time(s).
 */
export interface StateEntry extends StoredValue {
  readonly key: Key;
  /** The window (or other namespace) the value is scoped to; undefined for plain keyed state. */
  readonly namespace?: string;
  readonly keyGroup: number;
}

/** All entries of one checkpoint: uid → state name → entries, in snapshot order. */
export type CheckpointEntries = Map<string, Map<string, StateEntry[]>>;

/**
 * Reads and decodes every keyed entry of the checkpoint or savepoint in directory `dir` (a summary's `path`), through
 * the State Processor API: an incremental checkpoint's entries are what a restore sees (its base with the deltas
 * applied). Throws (with the file named) when the metadata or a state file is missing or damaged: the summaries
 * report such checkpoints, this reads only sound ones.
 * @example const entries = await readCheckpointEntries(storage, 'clicks/chk-3'); entries.get('per-user')?.get('reduce')
 */
export async function readCheckpointEntries(storage: CheckpointStorage, dir: string): Promise<CheckpointEntries> {
  const savepoint = await readSavepoint(storage, dir);
  const result: CheckpointEntries = new Map();
  for (const { uid } of savepoint.operators) {
    const states = new Map<string, StateEntry[]>();
    for await (const { keyed } of savepoint.payloads(uid)) {
      if (!keyed) continue;
      const metas = keyed.states;
      const decoders = metas.map(storedValueDecoder);
      const lists = metas.map((meta) => {
        let list = states.get(meta.name);
        if (list === undefined) states.set(meta.name, (list = []));
        return list;
      });
      // Entries name declared states: the State Processor API checked them.
      forEachPayloadEntry(keyed, { maxParallelism: savepoint.maxParallelism, keyGroups: true }, ([index, key, value, namespace], keyGroup) => {
        lists[index]!.push({ key: decodeKey(key), ...(namespace ? { namespace } : {}), keyGroup, ...decoders[index]!(value) });
      });
    }
    result.set(uid, states);
  }
  return result;
}

/** Options of `pageStateEntries`. */
export interface EntryPageOptions {
  /** Keys starting with this. */
  prefix?: string;
  /** Keys or values whose text contains this (case-insensitive). */
  search?: string;
  offset?: number;
  /** Entries per page (default 50). */
  limit?: number;
}

/** A page of a state's entries, sorted by key, with the number of entries that match. */
export interface EntryPage {
  readonly total: number;
  readonly offset: number;
  readonly entries: StateEntry[];
}

/**
 * Filters, sorts and pages entries for a key browser.
 * @example pageStateEntries(entries.get('per-user')!.get('reduce')!, { prefix: 'user-1', limit: 20 })
 */
export function pageStateEntries(entries: readonly StateEntry[], options: EntryPageOptions = {}): EntryPage {
  const { prefix = '', search = '', offset = 0, limit = 50 } = options;
  const needle = search.toLowerCase();
  const matching = entries
    .filter((entry) => String(entry.key).startsWith(prefix))
    .filter((entry) => needle === '' || String(entry.key).toLowerCase().includes(needle) || describeValue(entry.value).toLowerCase().includes(needle))
    .sort((a, b) => compareEntries(a, b));
  return { total: matching.length, offset, entries: matching.slice(offset, offset + limit) };
}

/** What changed in one state between two checkpoints, by key and namespace. */
export interface StateDiff {
  readonly uid: string;
  readonly state: string;
  readonly added: StateEntry[];
  readonly removed: StateEntry[];
  readonly changed: { before: StateEntry; after: StateEntry }[];
  readonly unchanged: number;
}

/**
 * Per operator and state: the keys `after` has that `before` has not, the other way round, and those whose value
 * differs (compared in their superjson form, so a Map or Date compares by content). A TTL state's value read or
 * written again unchanged is unchanged: only its `lastAccess` moved.
 * @example diffCheckpointEntries(await readCheckpointEntries(s, 'clicks/chk-3'), await readCheckpointEntries(s, 'clicks/chk-4'))
 */
export function diffCheckpointEntries(before: CheckpointEntries, after: CheckpointEntries): StateDiff[] {
  const diffs: StateDiff[] = [];
  const uids = new Set([...before.keys(), ...after.keys()]);
  for (const uid of uids) {
    const names = new Set([...(before.get(uid)?.keys() ?? []), ...(after.get(uid)?.keys() ?? [])]);
    for (const state of names) {
      const old = byKey(before.get(uid)?.get(state) ?? []);
      const now = byKey(after.get(uid)?.get(state) ?? []);
      const diff = { uid, state, added: [] as StateEntry[], removed: [] as StateEntry[], changed: [] as StateDiff['changed'], unchanged: 0 };
      for (const [id, entry] of now) {
        const previous = old.get(id);
        if (previous === undefined) diff.added.push(entry);
        else if (describeValue(previous.value) !== describeValue(entry.value)) diff.changed.push({ before: previous, after: entry });
        else diff.unchanged++;
      }
      for (const [id, entry] of old) if (!now.has(id)) diff.removed.push(entry);
      diff.added.sort(compareEntries);
      diff.removed.sort(compareEntries);
      diff.changed.sort((a, b) => compareEntries(a.after, b.after));
      diffs.push(diff);
    }
  }
  return diffs;
}

/** A stable text form of any value (superjson, so rich types keep their type), for search and comparison. */
export function describeValue(value: unknown): string {
  return JSON.stringify(superjson.serialize(value));
}

function byKey(entries: readonly StateEntry[]): Map<string, StateEntry> {
  return new Map(entries.map((entry) => [`${typeof entry.key}:${String(entry.key)}\u0000${entry.namespace ?? ''}`, entry]));
}

function compareEntries(a: StateEntry, b: StateEntry): number {
  const ka = String(a.key);
  const kb = String(b.key);
  if (ka !== kb) return ka < kb ? -1 : 1;
  const na = a.namespace ?? '';
  const nb = b.namespace ?? '';
  return na < nb ? -1 : na > nb ? 1 : 0;
}
