import { CheckpointCorruptedError } from '../core/errors.js';
import type { ShapedEntries } from '../core/types.js';
import { expandShaped, shapedProblem } from '../state/shapedEntries.js';
import type { StateFileEntry, OperatorStatePayload } from '../storage/layout.js';

/**
 * Shape checks of decoded checkpoint files. A file that passed its checksum can still be foreign or written by a
 * broken tool; what restore, the State Processor API and the inspector rely on is checked here once, so that they
 * meet a typed `CheckpointCorruptedError` naming the file rather than a TypeError deep in a backend.
 */

const STATE_KINDS = new Set(['value', 'list', 'map', 'reducing', 'aggregating']);

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const isIndex = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** The longest file name (in UTF-8 bytes) file systems take: NAME_MAX on Linux and macOS, NTFS's 255 characters. */
export const MAX_FILE_NAME_BYTES = 255;

const encoder = new TextEncoder();

/**
 * A file name inside a checkpoint directory: no separators, never `.` or `..`, so that it cannot point elsewhere, and
 * short enough for any file system, so that reading it fails as a damaged checkpoint, not with ENAMETOOLONG.
 */
function isFileName(value: unknown): boolean {
  return (
    typeof value === 'string' &&
    value !== '' &&
    value !== '.' &&
    value !== '..' &&
    !/[/\\\0]/.test(value) &&
    encoder.encode(value).length <= MAX_FILE_NAME_BYTES
  );
}

/** What is wrong with a `_metadata` file entry, for the error; undefined when it is valid (see `isStateFileEntry`). */
export function stateFileEntryProblem(entry: unknown): string | undefined {
  if (isStateFileEntry(entry)) return undefined;
  if (!isObject(entry)) return 'an entry that is not an object';
  const file = entry.file;
  if (typeof file === 'string' && !isFileName(file)) {
    const shown = JSON.stringify(file.length > 40 ? `${file.slice(0, 40)}…` : file);
    return `file ${shown} (${file.length} characters), which is not a file name a checkpoint holds (at most ${MAX_FILE_NAME_BYTES} bytes, no '/', '\\' or NUL, not '.' or '..')`;
  }
  return `an entry${typeof file === 'string' ? ` for file ${JSON.stringify(file)}` : ''} without a valid file name, subtask or key-group range`;
}

/** Whether a `_metadata` file entry has the fields and types loading relies on. */
export function isStateFileEntry(entry: unknown): entry is StateFileEntry {
  if (!isObject(entry) || !isFileName(entry.file) || !isIndex(entry.subtask)) return false;
  const groups = entry.keyGroups;
  if (groups !== null && !(Array.isArray(groups) && groups.length === 2 && isIndex(groups[0]) && isIndex(groups[1]) && groups[0] <= groups[1])) return false;
  return entry.checkpoint === undefined || isIndex(entry.checkpoint);
}

/**
 * Checks a decoded state file: it holds state of `uid`, and its keyed part (if any) is `{ states, keyGroups,
 * removed? }` with entries that point at declared states. Keys and values are checked where they are decoded.
 */
export function checkStatePayload(value: unknown, uid: string, name: string): OperatorStatePayload {
  const corrupt = (what: string) => new CheckpointCorruptedError(`${name}: ${what}; the file is damaged or was not written by weir — restore from another checkpoint`);
  if (!isObject(value) || value.uid !== uid) {
    throw new CheckpointCorruptedError(`${name}: holds state of '${String(isObject(value) ? value.uid : undefined).slice(0, 200)}', expected '${uid}'`);
  }
  const keyed = value.keyed;
  if (keyed === undefined) return value as unknown as OperatorStatePayload;
  if (!isObject(keyed) || !Array.isArray(keyed.states) || !Array.isArray(keyed.keyGroups)) throw corrupt('its keyed state is not { states, keyGroups }');
  keyed.states.forEach((meta, index) => {
    const valid =
      isObject(meta) &&
      typeof meta.name === 'string' &&
      STATE_KINDS.has(meta.kind as string) &&
      typeof meta.serializer === 'string' &&
      Number.isSafeInteger(meta.serializerVersion) &&
      (meta.version === undefined || (Number.isSafeInteger(meta.version) && (meta.version as number) >= 1)) &&
      (meta.ttl === undefined || meta.ttl === true);
    if (!valid) throw corrupt(`keyed state #${index} is not described by { name, kind, serializer, serializerVersion }`);
  });
  const states = keyed.states.length;
  const checkGroups = (groups: unknown, field: string, valueAt: number) => {
    if (!Array.isArray(groups)) throw corrupt(`its keyed ${field} is not a list of key groups`);
    for (const group of groups) {
      if (!Array.isArray(group) || group.length !== 2 || !isIndex(group[0]) || !Array.isArray(group[1])) throw corrupt(`a key group of its keyed ${field} is not [keyGroup, entries]`);
      for (const entry of group[1] as unknown[]) {
        // [state, key, value, namespace?] — or without the value for removed entries.
        const valid =
          Array.isArray(entry) &&
          (entry.length === valueAt || entry.length === valueAt + 1) &&
          isIndex(entry[0]) &&
          entry[0] < states &&
          (entry.length === valueAt || typeof entry[valueAt] === 'string');
        if (!valid) throw corrupt(`an entry of key group ${group[0]} in its keyed ${field} is malformed or names an undeclared state`);
      }
    }
  };
  checkGroups(keyed.keyGroups, 'entries', 3);
  if (keyed.removed !== undefined) checkGroups(keyed.removed, 'removals', 2);
  // Unbucketed entries (format version 2), flat, with the key-group range they lie in.
  if (keyed.flat !== undefined || keyed.flatNamespaced !== undefined || keyed.shaped !== undefined || keyed.range !== undefined) {
    const range = keyed.range;
    const validRange = range === undefined || (Array.isArray(range) && range.length === 2 && isIndex(range[0]) && isIndex(range[1]) && range[0] <= range[1]);
    if (!validRange) throw corrupt('its keyed entries have no key-group range [first, last]');
    const checkFlat = (flat: unknown, field: string, stride: number) => {
      if (flat === undefined) return;
      if (!Array.isArray(flat) || flat.length % stride !== 0) throw corrupt(`its keyed ${field} is not a list of ${stride}-field entries`);
      for (let i = 0; i < flat.length; i += stride) {
        const state: unknown = flat[i];
        if (!isIndex(state) || state >= states || (stride === 4 && typeof flat[i + 3] !== 'string')) {
          throw corrupt(`entry #${i / stride} in its keyed ${field} is malformed or names an undeclared state`);
        }
      }
    };
    checkFlat(keyed.flat, 'flat entries', 3);
    checkFlat(keyed.flatNamespaced, 'namespaced flat entries', 4);
    // Rows (format version 5) are read as the flat entries they stand for: every reader sees one form.
    if (keyed.shaped !== undefined) {
      const problem = shapedProblem(keyed.shaped, states);
      if (problem !== undefined) throw corrupt(problem);
      const flat = (keyed.flat as unknown[] | undefined) ?? [];
      expandShaped(keyed.shaped as ShapedEntries[], flat);
      keyed.flat = flat;
      delete keyed.shaped;
    }
  }
  return value as unknown as OperatorStatePayload;
}
