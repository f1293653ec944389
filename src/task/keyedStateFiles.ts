import type { Json, KeyGroupRange, KeyedStatePayload } from '../core/types.js';
import { yieldToEventLoop } from '../core/yieldToEventLoop.js';
import { settingAside } from '../state/setAsideValues.js';
import type { BufferPool } from '../storage/bufferPool.js';
import { FlatStateFileBuilder } from '../storage/fileFormat.js';
import { stateFileName, type OperatorStatePayload } from '../storage/layout.js';
import { WritesInFlight } from './writesInFlight.js';

/**
 * A task's keyed state written as state files, chunk by chunk, so that neither the payload nor its encoding is ever
 * whole in memory: the two ways `SnapshotWriter` writes a snapshot, by the shape of its pieces.
 */

/** Entries per keyed state file: big state is written as several files of about this many entries. */
export const CHUNK_ENTRIES = 131_072;

/**
 * Entries materialised and encoded in one macrotask, for a snapshot whose pieces can be joined into one file
 * (`KeyedSnapshot.flatChunks`): a few milliseconds of work, after which the job's records run again. Not fewer:
 * until the snapshot is done, a record reading a key not encoded yet pays for a private copy of its value
 * (copy-on-write), so the more source chunks run between pieces, the more copies; at 8 192 a 1M-key job runs four
 * times as many chunks inside each checkpoint (measured side by side on a loaded 2-core machine: throughput with
 * checkpoints on over off 0.35-0.54 at 8 192, 0.58-0.64 at 32 768). The price is a longer pause per piece.
 */
export const SLICE_ENTRIES = 32_768;

/**
 * Entries a flat snapshot materialises (each value checked to be plain JSON, or encoded) and stringifies at a time,
 * inside a slice: small, so that the values the check has just read are still in the CPU's cache when
 * `JSON.stringify` reads them again (a large state's values are scattered over the heap, and each is a cache miss
 * the first time). Pieces of a whole slice read every value from memory twice: the check and stringify of the 1M
 * values of a job's state took 1.35-2.2× the time in pieces of a slice as in pieces of 256 (alternating in one
 * process, a loaded 2-core machine).
 */
export const PIECE_ENTRIES = 256;

/**
 * Encoded bytes of a flat snapshot that may wait for the storage at once. Until the last piece is encoded, every
 * record that reads a key not encoded yet pays for a private copy of its value (copy-on-write); waiting for each
 * file's write (an fsync) before encoding the next let the job's records run meanwhile and copy about a fifth of a
 * 1M-key state per checkpoint. Encoding ahead of the storage ends the copying sooner; the bound keeps memory in check
 * for state far larger than that.
 */
export const IN_FLIGHT_BYTES = 64 * 1024 * 1024;

/** The task whose state is written: its operator, subtask and key groups. */
export interface KeyedTask {
  readonly uid: string;
  readonly subtask: number;
  readonly range: KeyGroupRange;
}

/** Writes one state file (`payload`, or a file already encoded); false when the checkpoint was aborted meanwhile. */
export type WriteStateFile = (file: string, keyGroups: [number, number] | null, payload: OperatorStatePayload | Uint8Array, setAside: readonly unknown[]) => Promise<boolean>;

/**
 * Writes keyed state chunk by chunk: one chunk is named after the task's key-group range as before
 * (`<uid>.<subtask>.kg-<start>-<end>`), several after their own range and position (`….kg-<first>-<last>.<n>`).
 * One chunk is read ahead to tell the two apart. Operator state goes into the first file. With `setAside`, each
 * chunk's rich values are set aside as it is materialised and written beside its file (`writeStructured`).
 */
export async function writeChunks(payloads: Iterable<KeyedStatePayload>, task: KeyedTask, operator: Json | undefined, setAside: boolean, write: WriteStateFile): Promise<boolean> {
  const { uid, subtask, range } = task;
  const chunks = payloads[Symbol.iterator]();
  const materialize = () => {
    const values: unknown[] = [];
    return { next: setAside ? settingAside(values, () => chunks.next()) : chunks.next(), values };
  };
  const inFlight = new WritesInFlight(1);
  let { next, values } = materialize();
  if (next.done) return write(stateFileName(uid, subtask, range), [range.start, range.end], { uid, keyed: { states: [], keyGroups: [] }, operator }, []);
  for (let index = 0; !next.done; index++) {
    const chunk = next.value;
    const chunkValues = values;
    ({ next, values } = materialize());
    const single = index === 0 && next.done;
    // A delta's chunk may hold only removals (`keyGroups` empty): its range spans both lists.
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    for (const [group] of [...chunk.keyGroups, ...(chunk.removed ?? [])]) {
      first = Math.min(first, group);
      last = Math.max(last, group);
    }
    // Unbucketed entries (a heap full snapshot) may be of any key group of their range.
    if ((chunk.flat?.length ?? 0) > 0 || (chunk.flatNamespaced?.length ?? 0) > 0) {
      first = Math.min(first, chunk.range?.[0] ?? range.start);
      last = Math.max(last, chunk.range?.[1] ?? range.end);
    }
    const file = single ? stateFileName(uid, subtask, range) : `${stateFileName(uid, subtask, { start: first, end: last })}.${index}`;
    const keyGroups: [number, number] = single ? [range.start, range.end] : [first, last];
    // One write in flight while the next chunk is materialised and encoded: the fsync of one file overlaps the
    // CPU work of the next, and memory stays bounded to two chunks (a chunk's payload is not encoded yet, so its
    // size is unknown here: the window counts it as full).
    if (!(await inFlight.room())) return false;
    inFlight.add(write(file, keyGroups, { uid, keyed: chunk, operator: index === 0 ? operator : undefined }, chunkValues), 1);
    await yieldToEventLoop();
  }
  return inFlight.settle();
}

/**
 * Writes a snapshot whose pieces are flat (`KeyedSnapshot.flatChunks`) as `writeChunks` writes its chunks, files of
 * about `fileEntries` entries named alike, but each file built from small pieces (`PIECE_ENTRIES` each, see there),
 * a slice of them (`SLICE_ENTRIES`) materialised and encoded in a macrotask of its own: the job's records run between
 * slices, so a large snapshot does not stop them for the time of a whole file. With `setAside`, the rich values of a file's pieces are set aside
 * into one list, numbered across the file, and written beside it (`writeStructured`). Also the way to IndexedDB:
 * in Chromium, materialising and stringifying 100k entries as one chunk (`writeChunks`) took 45–55 ms, in pieces 15–20.
 */
export async function writeFlatChunks(
  pieces: Iterable<KeyedStatePayload>,
  task: KeyedTask,
  operator: Json | undefined,
  fileEntries: number,
  setAside: boolean,
  aborted: () => boolean,
  write: WriteStateFile,
  /** At most how many entries the pieces hold (`KeyedSnapshot.entries`), to size each file's buffer once. */
  totalEntries?: number,
  /** Where the files' buffers come from, and go back to once written. */
  buffers?: BufferPool,
): Promise<boolean> {
  const { uid, subtask, range } = task;
  const iterator = pieces[Symbol.iterator]();
  // The values set aside from the pieces of the file being built: a piece is materialised into the list of the
  // file it goes into.
  let values: unknown[] = [];
  const materialize = () => (setAside ? settingAside(values, () => iterator.next()) : iterator.next());
  let next = materialize();
  if (next.done) return write(stateFileName(uid, subtask, range), [range.start, range.end], { uid, keyed: { states: [], keyGroups: [] }, operator }, []);
  const inFlight = new WritesInFlight(IN_FLIGHT_BYTES);
  let written = 0;
  for (let index = 0; !next.done; index++) {
    const fileRange: [number, number] = next.value.range ?? [range.start, range.end];
    const expected = totalEntries === undefined ? 0 : Math.min(fileEntries, totalEntries - written);
    const file = new FlatStateFileBuilder(uid, next.value.states, fileRange, expected, buffers);
    const fileValues = values;
    for (let slice = 0; ; ) {
      file.add(next.value);
      if (file.entries >= slice + SLICE_ENTRIES) {
        slice = file.entries;
        await yieldToEventLoop();
        if (aborted()) {
          // Aborted: the writes in flight settle before the caller removes what they wrote.
          await inFlight.settle().catch(() => undefined);
          return false;
        }
      }
      // A full file takes no more pieces: the next one is materialised into the next file's list.
      const full = file.entries >= fileEntries;
      if (full) values = [];
      next = materialize();
      if (next.done || full) break;
    }
    const single = index === 0 && next.done === true;
    const name = single ? stateFileName(uid, subtask, range) : `${stateFileName(uid, subtask, { start: fileRange[0], end: fileRange[1] })}.${index}`;
    written += file.entries;
    const bytes = file.finish(index === 0 ? operator : undefined, fileValues.length);
    // Taken before the write: a storage in another thread may take the bytes (`CheckpointStorage.writeTaking`).
    const length = bytes.length;
    if (!(await inFlight.room())) return false;
    const writing = write(name, single ? [range.start, range.end] : fileRange, bytes, fileValues);
    // Written, the storage holds no reference to the bytes any more (see `CheckpointStorage.write`).
    if (buffers !== undefined) writing.then(() => buffers.give(bytes), () => undefined);
    inFlight.add(writing, length);
  }
  return inFlight.settle();
}
