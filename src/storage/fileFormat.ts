import CRC32 from 'crc-32';
import { CheckpointCorruptedError } from '../core/errors.js';
import { revivingSetAside } from '../state/setAsideValues.js';
import type { ShapedEntries } from '../core/types.js';
import { BufferPool } from './bufferPool.js';
import { xxh32 } from './xxh32.js';

/**
 * Every persisted file: one header line of JSON — `{"weir":"state","version":1,"length":N,"crc32":C}` — then N bytes of
 * JSON payload whose CRC-32 is C. The header makes files self-describing (`head -1` tells what a file is), the
 * length catches truncation and extension, the checksum catches corruption, and the kind catches a file of another
 * kind (or another program) in the wrong place.
 *
 * Version 2 is a state file whose keyed payload holds unbucketed entries (`flat`, `flatNamespaced`, see
 * `KeyedStatePayload`), which a version-1 reader would silently skip. Version 3 is a state file with values set aside
 * (see `setAsideValues`): its header counts them (`"values":N`), and they are stored beside the file by a storage that
 * keeps structured values, so the bytes alone do not hold the state. Every other file is still written as version 1.
 *
 * Version 4 is a file of any kind whose checksum is XXH32 (`"xxh32":H`, see `xxh32.ts`) instead of CRC-32: what
 * weir writes where there is no native CRC-32 (browsers), and which a weir reading up to version 3 refuses by its
 * version instead of as a checksum mismatch.
 *
 * Version 5 is a state file whose keyed payload holds values as rows of their fields (`shaped`, see
 * `KeyedStatePayload.shaped`), which a weir reading up to version 4 would silently skip; its header names its
 * checksum (`crc32` or `xxh32`). All five are read.
 */
export const FORMAT_VERSION = 5;

/** `history` is a job's record of its failed checkpoints (`failureHistory.ts`). */
export type FileKind = 'state' | 'metadata' | 'history';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });
const NEWLINE = 0x0a;
const MAX_HEADER = 256;
/**
 * Deepest JSON nesting a file may have. Whatever reads a payload (restore, serializers, the inspector) recurses over
 * values, so a deeper payload would end in a stack overflow (RangeError) instead of a clear error.
 */
const MAX_NESTING = 512;

/** The oldest format version this weir reads. */
const OLDEST_VERSION = 1;

/**
 * The version a payload needs: 5 for a state file with rows (`shaped`), else 4 with an XXH32 checksum, else 3 with
 * set-aside values, 2 for a state file with unbucketed keyed entries, 1 otherwise.
 */
function versionOf(kind: FileKind, payload: unknown, setAside: number): number {
  const keyed = kind === 'state' ? (payload as { keyed?: { flat?: unknown; flatNamespaced?: unknown; shaped?: unknown } } | null)?.keyed : undefined;
  if (keyed?.shaped !== undefined) return 5;
  if (CHECKSUM.name === 'xxh32') return 4;
  if (kind !== 'state') return 1;
  return stateVersion(keyed?.flat !== undefined || keyed?.flatNamespaced !== undefined, setAside, false);
}

/**
 * The version of a state file: 5 with rows (`shaped`), else 4 with an XXH32 checksum, else 3 with set-aside values,
 * 2 with unbucketed keyed entries (`flat`), 1 otherwise.
 */
function stateVersion(flat: boolean, setAside: number, shaped: boolean): number {
  return shaped ? 5 : CHECKSUM.name === 'xxh32' ? 4 : setAside > 0 ? 3 : flat ? 2 : 1;
}

/** Node's native CRC-32 (`zlib.crc32`), looked up without an import so that bundles for the browser do not pull `node:zlib` in; none in browsers. */
const nativeCrc32 = (() => {
  const getBuiltinModule = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
  return (getBuiltinModule?.('node:zlib') as { crc32?: (data: Uint8Array) => number } | undefined)?.crc32;
})();

/** The checksums a file's header may name, each a signed 32-bit integer. */
const CHECKSUMS = {
  /** CRC-32 as `crc-32` computes it: the native one where there is one (several times faster on the megabytes of a state file). */
  crc32: nativeCrc32 ? (bytes: Uint8Array) => nativeCrc32(bytes) | 0 : (bytes: Uint8Array) => CRC32.buf(bytes),
  xxh32,
} as const;

/**
 * The checksum of the files written here: CRC-32 where it is native, XXH32 elsewhere (browsers), where it costs a
 * fifth of a CRC-32 in JavaScript (see `xxh32.ts`): for a 100k-key checkpoint to IndexedDB, ~4 ms of ~28.
 */
const CHECKSUM: { readonly name: keyof typeof CHECKSUMS; readonly of: (bytes: Uint8Array) => number } = nativeCrc32
  ? { name: 'crc32', of: CHECKSUMS.crc32 }
  : { name: 'xxh32', of: CHECKSUMS.xxh32 };

/** The file of `payload`; `setAside` counts the values its markers refer to, which the storage keeps beside it. */
export function encodeFile(kind: FileKind, payload: unknown, setAside = 0): Uint8Array {
  // `undefined` (and functions) stringify to nothing: an empty body, as `TextEncoder` makes of it.
  const text = (JSON.stringify(payload) as string | undefined) ?? '';
  const version = versionOf(kind, payload, setAside);
  // The body is encoded straight behind room for the header (enough when it is ASCII, as it mostly is: a UTF-8 byte
  // per character), and the header put right in front of it: no copy of the body.
  const file = new Uint8Array(MAX_HEADER + text.length);
  const { read, written } = encoder.encodeInto(text, file.subarray(MAX_HEADER));
  if (read !== text.length) {
    const body = encoder.encode(text);
    const header = encoder.encode(headerLine(kind, version, body, setAside));
    const whole = new Uint8Array(header.length + body.length);
    whole.set(header, 0);
    whole.set(body, header.length);
    return whole;
  }
  const body = file.subarray(MAX_HEADER, MAX_HEADER + written);
  const header = encoder.encode(headerLine(kind, version, body, setAside));
  file.set(header, MAX_HEADER - header.length);
  return file.subarray(MAX_HEADER - header.length, MAX_HEADER + written);
}

/**
 * A state file of unbucketed keyed entries (`flat`, `flatNamespaced`: format version 2, or 3 when some of their
 * values were set aside while the pieces were materialised, see `setAsideValues`) built from pieces of a
 * snapshot as they are materialised, so that the work of encoding one file can be spread over several macrotasks.
 * Reads back (`decodeFile`) as the payload `{ uid, keyed: { states, keyGroups: [], flat, flatNamespaced, range },
 * operator }` that `encodeFile` would have written.
 *
 * Each piece is stringified and its text encoded into the file's bytes at once (`ByteList`), so the text dies young:
 * kept as strings until `finish`, the ~37 MB of text of a 10⁶-key state lived through young-generation collections
 * (copied, then promoted), and joining them with commas made cons strings that encoding flattened (copied again).
 * The file is one buffer sized from the bytes per entry of its first pieces (`expectedEntries`), grown only when
 * the guess falls short: a buffer growing by doubling made V8 collect garbage more often (external memory counts).
 * Buffers come from `pool`, where the caller gives the file's back once written (see `BufferPool`).
 */
export class FlatStateFileBuilder {
  /** Room for the header, then the body so far: the payload's head and its first list of entries, left open. */
  private readonly body: ByteList;
  /**
   * The file's lists of entries, each left open, by name: `flat`, `namespaced`, or a shape of rows as
   * `[state, fields]` in JSON. The first to get entries is written into the body (most files have one list: no
   * copy); the others into buffers of their own, joined to the body by `finish`.
   */
  private readonly lists = new Map<string, ByteList>();
  private sized = false;
  /** Entries added so far. */
  entries = 0;

  constructor(
    uid: string,
    states: unknown,
    private readonly range: readonly [number, number],
    /** About how many entries the file will hold, to size its buffer; unknown, it grows as needed. */
    private readonly expectedEntries = 0,
    private readonly pool = new BufferPool(0),
  ) {
    this.body = new ByteList(pool, MAX_HEADER + INITIAL_BYTES);
    this.body.length = MAX_HEADER;
    this.body.append(`{"uid":${JSON.stringify(uid)},"keyed":{"states":${JSON.stringify(states)},"keyGroups":[]`);
  }

  /** Adds a piece's `flat`, `flatNamespaced` and `shaped` entries (its states and range must be this file's). */
  add(piece: { readonly flat?: readonly unknown[]; readonly flatNamespaced?: readonly unknown[]; readonly shaped?: readonly ShapedEntries[] }): void {
    const { flat, flatNamespaced, shaped } = piece;
    if (flat !== undefined && flat.length > 0) this.addTo(FLAT, flat, 3);
    if (flatNamespaced !== undefined && flatNamespaced.length > 0) this.addTo(NAMESPACED, flatNamespaced, 4);
    if (shaped !== undefined) for (const { state, fields, rows } of shaped) if (rows.length > 0) this.addTo(JSON.stringify([state, fields]), rows, fields.length + 1);
  }

  /** Appends `items` (entries of `width` items each) to the list `name`, opening it with its first items. */
  private addTo(name: string, items: readonly unknown[], width: number): void {
    let list = this.lists.get(name);
    const more = list !== undefined;
    if (list === undefined) {
      list = this.lists.size === 0 ? this.body : new ByteList(this.pool, INITIAL_BYTES);
      this.lists.set(name, list);
      // A list in a buffer of its own is written without its name: `finish` puts it in its place.
      if (list === this.body) list.append(name === FLAT ? ',"flat":' : name === NAMESPACED ? ',"flatNamespaced":' : `,"shaped":[${rowsHead(name)}`);
      else if (name !== FLAT && name !== NAMESPACED) list.append(rowsHead(name));
    } else if (list === this.body) this.sizeFor(this.expectedEntries);
    list.appendItems(JSON.stringify(items), more);
    this.entries += items.length / width;
  }

  /**
   * Once, when the first pieces are in: grows the buffer to what `expected` entries take at the bytes per entry so
   * far (an eighth more, for values that vary), so that a file of 131 072 entries is written without another copy.
   */
  private sizeFor(expected: number): void {
    if (this.sized || expected <= this.entries || this.entries === 0) return;
    this.sized = true;
    const { body } = this;
    body.reserve(Math.ceil(body.length + ((body.length - MAX_HEADER) / this.entries) * (expected - this.entries) * 1.125));
  }

  /** The file, with `operator` as the payload's operator state; `setAside` counts the values its markers refer to (version 3). */
  finish(operator: unknown, setAside = 0): Uint8Array {
    const { body, lists } = this;
    const shapes = [...lists.keys()].filter((name) => name !== FLAT && name !== NAMESPACED);
    const first = lists.keys().next().value;
    const join = (name: string, before: string, after: string) => {
      const list = lists.get(name);
      if (list === undefined) return;
      if (list !== body) {
        body.append(before);
        body.appendBytes(list.bytes.subarray(0, list.length));
        this.pool.give(list.bytes);
      }
      body.append(after);
    };
    // The body's own list is closed first, then the others follow in their places.
    if (first === FLAT || first === NAMESPACED) join(first, '', ']');
    if (shapes.length > 0) {
      if (first !== shapes[0]) body.append(',"shaped":[');
      shapes.forEach((name, index) => join(name, index === 0 ? '' : ',', ']}'));
      body.append(']');
    }
    if (first !== FLAT) join(FLAT, ',"flat":', ']');
    if (first !== NAMESPACED) join(NAMESPACED, ',"flatNamespaced":', ']');
    const tail = operator === undefined ? '' : `,"operator":${JSON.stringify(operator) ?? 'null'}`;
    body.append(`,"range":${JSON.stringify(this.range)}}${tail}}`);
    const payload = body.bytes.subarray(MAX_HEADER, body.length);
    const header = encoder.encode(headerLine('state', stateVersion(true, setAside, shapes.length > 0), payload, setAside));
    body.bytes.set(header, MAX_HEADER - header.length);
    return body.bytes.subarray(MAX_HEADER - header.length, body.length);
  }
}

/** Names of a state file's lists that are not rows (`FlatStateFileBuilder.lists`). */
const FLAT = 'flat';
const NAMESPACED = 'namespaced';

/** The head of a list of rows named `[state, fields]` in JSON, up to its open `rows`. */
function rowsHead(shape: string): string {
  const [state, fields] = JSON.parse(shape) as [number, string[]];
  return `{"state":${state},"fields":${JSON.stringify(fields)},"rows":`;
}

/** Bytes a file's buffer starts with, before its first pieces tell how many it needs. */
const INITIAL_BYTES = 64 * 1024;

/** UTF-8 bytes written one after the other into one buffer (from `pool`), grown when full. */
class ByteList {
  bytes: Uint8Array;
  length = 0;

  constructor(private readonly pool: BufferPool, capacity: number) {
    this.bytes = pool.take(capacity);
  }

  /** Appends `text` as UTF-8. */
  append(text: string): void {
    let rest = text;
    for (;;) {
      const { read, written } = encoder.encodeInto(rest, this.bytes.subarray(this.length));
      this.length += written;
      if (read === rest.length) return;
      // Out of room (a character takes up to 3 bytes a UTF-16 unit): grow, and encode the rest.
      rest = rest.slice(read);
      this.grow(this.length + 3 * rest.length);
    }
  }

  appendBytes(bytes: Uint8Array): void {
    if (this.length + bytes.length > this.bytes.length) this.grow(this.length + bytes.length);
    this.bytes.set(bytes, this.length);
    this.length += bytes.length;
  }

  /**
   * Appends the items of a JSON array's text (`[…]`, ASCII brackets), after a comma when the list has items
   * already: its `[` opens the list or is overwritten by the comma, and its `]` is dropped (the list stays open).
   */
  appendItems(array: string, more: boolean): void {
    const at = this.length;
    this.append(array);
    if (more) this.bytes[at] = 0x2c;
    this.length--;
  }

  /** Makes room for `capacity` bytes in all. */
  reserve(capacity: number): void {
    if (capacity > this.bytes.length) this.grow(capacity);
  }

  private grow(needed: number): void {
    const bytes = this.pool.take(needed, Math.ceil(this.bytes.length * 1.5));
    bytes.set(this.bytes.subarray(0, this.length));
    this.pool.give(this.bytes);
    this.bytes = bytes;
  }
}

function headerLine(kind: FileKind, version: number, body: Uint8Array, setAside: number): string {
  const header = { weir: kind, version, length: body.length, [CHECKSUM.name]: CHECKSUM.of(body), ...(setAside > 0 ? { values: setAside } : {}) };
  return `${JSON.stringify(header)}\n`;
}

/**
 * Checks and parses a file written by `encodeFile`; `name` goes into the error, which says what is wrong. `values`
 * are the values the storage kept beside the file (`CheckpointStorage.readStructured`), if any; `checked` is what an
 * earlier `checkFile` of the same file found (see there).
 */
export function decodeFile(kind: FileKind, bytes: Uint8Array, name: string, values: readonly unknown[] = [], checked?: CheckedPayload): unknown {
  const { body } = checkFile(kind, bytes, name, values, checked);
  try {
    return JSON.parse(decoder.decode(body), values.length > 0 ? revivingSetAside(values) : undefined);
  } catch (error) {
    throw corruptFile(name, error instanceof RangeError ? error.message : 'payload is not valid JSON');
  }
}

function corruptFile(name: string, what: string): CheckpointCorruptedError {
  return new CheckpointCorruptedError(`${name}: ${what}; the file is damaged or was not written by weir — restore from another checkpoint`);
}

/** What `checkFile` found of a file's payload: its size and checksum (the one its header names), which tell the same bytes read again. */
export interface CheckedPayload {
  readonly length: number;
  readonly checksum: number;
}

/**
 * Every check of `decodeFile` short of parsing the payload (header, kind, version, length, checksum, nesting, count
 * of set-aside values): what a restore runs on a large file it reads again, and parses, only when it restores it.
 * `checked`, what an earlier check of the same file found, spares the nesting scan (the costliest check, in
 * JavaScript) when the bytes read again have that checksum: they are the bytes scanned then.
 */
export function checkFile(kind: FileKind, bytes: Uint8Array, name: string, values: readonly unknown[] = [], checked?: CheckedPayload): { body: Uint8Array; checked: CheckedPayload } {
  const corrupt = (what: string) => corruptFile(name, what);
  const end = bytes.subarray(0, MAX_HEADER).indexOf(NEWLINE);
  if (end < 0) throw corrupt('no weir header');
  type Header = { weir?: unknown; version?: unknown; length?: unknown; crc32?: unknown; xxh32?: unknown; values?: unknown };
  let header: Header;
  try {
    header = JSON.parse(decoder.decode(bytes.subarray(0, end))) as Header;
  } catch {
    throw corrupt('unreadable weir header');
  }
  if (header === null || typeof header !== 'object' || header.weir !== kind) throw corrupt(`not a weir ${kind} file`);
  if (!(typeof header.version === 'number' && Number.isInteger(header.version) && header.version >= OLDEST_VERSION && header.version <= FORMAT_VERSION)) {
    throw new CheckpointCorruptedError(
      `${name}: format version ${String(header.version)} is not supported by this weir (it reads versions ${OLDEST_VERSION} to ${FORMAT_VERSION})`,
    );
  }
  const body = bytes.subarray(end + 1);
  if (header.length !== body.length) throw corrupt(`expected ${String(header.length)} payload bytes, found ${body.length} (truncated or extended)`);
  // Version 4 is checked with XXH32, every earlier one with CRC-32, and version 5 with the one its header names.
  const xxh = header.version === 4 || (header.version === 5 && header.xxh32 !== undefined);
  const [expected, checksum] = xxh ? [header.xxh32, CHECKSUMS.xxh32(body)] : [header.crc32, CHECKSUMS.crc32(body)];
  if (expected !== checksum) throw corrupt('checksum mismatch');
  const scanned = checked !== undefined && checked.checksum === checksum && checked.length === body.length;
  if (!scanned && nestedDeeperThan(body, MAX_NESTING)) throw corrupt(`payload is nested deeper than ${MAX_NESTING} levels`);
  const setAside = header.values ?? 0;
  if (!(typeof setAside === 'number' && Number.isInteger(setAside) && setAside >= 0)) throw corrupt('unreadable count of set-aside values in the weir header');
  if (setAside !== values.length) {
    throw corrupt(
      values.length === 0
        ? `its state has ${setAside} values kept beside the file by the storage it was written to (IndexedDB), which were not found with it`
        : `expected ${setAside} values kept beside the file, found ${values.length}`,
    );
  }
  return { body, checked: { length: body.length, checksum } };
}

/** Whether JSON text nests arrays and objects more than `max` levels deep (brackets inside strings do not count). */
function nestedDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  const length = bytes.length;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]!;
    if (byte === 0x22) {
      // A string, read to its closing quote in a loop of its own (about half of a state file's bytes are in
      // strings: this loop tests two bytes where the outer one tests five); a backslash escapes the next byte.
      for (i++; i < length; i++) {
        const inString = bytes[i]!;
        if (inString === 0x22) break;
        if (inString === 0x5c) i++;
      }
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > max) return true;
    } else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return false;
}
