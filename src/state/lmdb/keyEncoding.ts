import { InvalidKeyError } from '../../core/errors.js';
import type { Key } from '../../core/types.js';

/**
 * LMDB keys of the LMDB state backend, order-preserving and self-delimiting so that related rows are contiguous:
 *
 *     [key group: u16 BE][state id: u16 BE][user key][namespace][map key, for map state only]
 *
 * A snapshot or rescale of one key group reads one range, a state's rows for one user key form one range (every
 * window of the key, the void namespace first), a map in one namespace forms one range, and bytewise order follows
 * value order within a type: numbers by value, strings by UTF-8 bytes, bigints by value.
 */

/** The void namespace (state not scoped to a window): one byte, sorting before every window. */
const VOID_NAMESPACE = 0x00;
const NUMBER = 0x10;
const BIGINT_NEGATIVE = 0x20;
const BIGINT_POSITIVE = 0x21;
const STRING = 0x30;
const FALSE = 0x40;
const TRUE = 0x41;

/** Bytes before the user key: key group and state id. */
export const PREFIX_BYTES = 4;

/**
 * The row where the value encoder (msgpack) keeps the record structures it shares across rows, so that each row holds
 * its values without their field names. It sorts after every state row, since key groups stay below 2¹⁵: the rows
 * of state are the range before it.
 */
export const STRUCTURES_ROW = Buffer.from([0xff, 0xff]);

/** Longest key LMDB accepts by default (511 bytes); longer ones are rejected with a clear error. */
const MAX_KEY_BYTES = 511;

/**
 * Builds keys in one reusable buffer: `begin` writes the prefix, `add` appends a user or map key, `key` is a view
 * of the bytes written so far. LMDB copies a key when it is used, so the view may be overwritten right after.
 */
export class KeyWriter {
  private readonly buffer = Buffer.allocUnsafe(64 * 1024);
  private end = 0;
  /**
   * The views `key` hands out, by length: one buffer, so a view of n bytes is always the same one. Making a view
   * per row cost about as much as encoding its key.
   */
  private readonly views: Buffer[] = [];

  begin(keyGroup: number, stateId: number): this {
    this.buffer.writeUInt16BE(keyGroup, 0);
    this.buffer.writeUInt16BE(stateId, 2);
    this.end = PREFIX_BYTES;
    return this;
  }

  add(value: unknown): this {
    this.end = writeKeyPart(this.buffer, this.end, value);
    return this;
  }

  /** Appends a namespace: one byte for the void one (the common case), a string part for a window. */
  addNamespace(namespace: string): this {
    if (namespace === '') this.buffer[this.end++] = VOID_NAMESPACE;
    else this.end = writeKeyPart(this.buffer, this.end, namespace);
    return this;
  }

  key(): Buffer {
    if (this.end > MAX_KEY_BYTES) {
      throw new InvalidKeyError(`a key of ${this.end} bytes does not fit the LMDB state backend (at most ${MAX_KEY_BYTES}); use shorter keys`);
    }
    return (this.views[this.end] ??= this.buffer.subarray(0, this.end));
  }

  /** The first key after every key starting with the bytes written so far: the exclusive end of their range. */
  rangeEnd(): Buffer {
    const end = Buffer.allocUnsafe(this.end + 1);
    this.buffer.copy(end, 0, 0, this.end);
    end[this.end] = 0xff;
    return end;
  }
}

const float = new DataView(new ArrayBuffer(8));

function writeKeyPart(buffer: Buffer, at: number, value: unknown): number {
  switch (typeof value) {
    case 'string': {
      buffer[at++] = STRING;
      const ascii = writeAscii(buffer, at, value);
      if (ascii >= 0) {
        buffer[ascii] = 0;
        buffer[ascii + 1] = 0;
        return ascii + 2;
      }
      const end = at + buffer.write(value, at, 'utf8');
      if (value.includes('\0')) return escapeZeros(buffer, at, end);
      buffer[end] = 0;
      buffer[end + 1] = 0;
      return end + 2;
    }
    case 'number': {
      // IEEE 754 bits, sign flipped for positives and all bits flipped for negatives: bytewise order = numeric order.
      buffer[at++] = NUMBER;
      float.setFloat64(0, value === 0 ? 0 : value);
      const negative = (float.getUint8(0) & 0x80) !== 0;
      for (let i = 0; i < 8; i++) {
        const byte = float.getUint8(i);
        buffer[at + i] = negative ? ~byte & 0xff : i === 0 ? byte | 0x80 : byte;
      }
      return at + 8;
    }
    case 'boolean':
      buffer[at] = value ? TRUE : FALSE;
      return at + 1;
    case 'bigint': {
      // Tag by sign, then the magnitude's length and big-endian bytes, inverted for negatives.
      const negative = value < 0n;
      let hex = (negative ? -value : value).toString(16);
      if (hex.length % 2 === 1) hex = `0${hex}`;
      const bytes = Buffer.from(hex, 'hex');
      buffer[at++] = negative ? BIGINT_NEGATIVE : BIGINT_POSITIVE;
      buffer[at++] = negative ? 0xff - bytes.length : bytes.length;
      for (const byte of bytes) buffer[at++] = negative ? 0xff - byte : byte;
      return at;
    }
    default:
      throw new InvalidKeyError(
        `the LMDB state backend stores keys and map-state keys as strings, numbers, booleans or bigints, not ${value === null ? 'null' : typeof value}; ` +
          'turn the key into a string, or use the heap backend',
      );
  }
}

/**
 * Writes `text` byte by byte when it is ASCII without NUL characters (UTF-8 is then the same bytes), the common
 * case of keys: a loop costs a fraction of `Buffer.write` and a scan for NULs on short strings. -1 for any other text;
 * nothing is promised about the bytes written then.
 */
function writeAscii(buffer: Buffer, at: number, text: string): number {
  // Past the longest key LMDB takes, the buffer's end could be reached: the general path bounds such text.
  if (text.length > MAX_KEY_BYTES) return -1;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0 || code > 0x7f) return -1;
    buffer[at++] = code;
  }
  return at;
}

/** A string holding NUL characters: each 0x00 byte becomes 0x00 0xff, so that 0x00 0x00 still ends the string. */
function escapeZeros(buffer: Buffer, start: number, end: number): number {
  const raw = Buffer.from(buffer.subarray(start, end));
  let at = start;
  for (const byte of raw) {
    buffer[at++] = byte;
    if (byte === 0) buffer[at++] = 0xff;
  }
  buffer[at] = 0;
  buffer[at + 1] = 0;
  return at + 2;
}

/** A user or map key read back from `bytes` at `at`, and where the next part starts. */
export function readKeyPart(bytes: Uint8Array, at: number): { value: Key; next: number } {
  const tag = bytes[at++];
  switch (tag) {
    case STRING: {
      let end = at;
      let escaped = false;
      while (!(bytes[end] === 0 && bytes[end + 1] === 0)) {
        if (bytes[end] === 0) escaped = true;
        end += bytes[end] === 0 ? 2 : 1;
      }
      const raw = Buffer.from(bytes.buffer, bytes.byteOffset + at, end - at);
      const text = escaped ? unescapeZeros(raw) : raw.toString('utf8');
      return { value: text, next: end + 2 };
    }
    case NUMBER: {
      const negative = (bytes[at]! & 0x80) === 0;
      for (let i = 0; i < 8; i++) {
        const byte = bytes[at + i]!;
        float.setUint8(i, negative ? ~byte & 0xff : i === 0 ? byte & 0x7f : byte);
      }
      return { value: float.getFloat64(0), next: at + 8 };
    }
    case FALSE:
    case TRUE:
      return { value: tag === TRUE, next: at };
    case BIGINT_NEGATIVE:
    case BIGINT_POSITIVE: {
      const negative = tag === BIGINT_NEGATIVE;
      const length = negative ? 0xff - bytes[at]! : bytes[at]!;
      let magnitude = 0n;
      for (let i = 1; i <= length; i++) magnitude = (magnitude << 8n) | BigInt(negative ? 0xff - bytes[at + i]! : bytes[at + i]!);
      return { value: negative ? -magnitude : magnitude, next: at + 1 + length };
    }
    default:
      throw new InvalidKeyError(`the LMDB state backend found a key part with unknown tag ${String(tag)}; its working directory is not one it wrote`);
  }
}

/** The namespace read back from `bytes` at `at` (written by `addNamespace`), and where the next part starts. */
export function readNamespace(bytes: Uint8Array, at: number): { value: string; next: number } {
  if (bytes[at] === VOID_NAMESPACE) return { value: '', next: at + 1 };
  const { value, next } = readKeyPart(bytes, at);
  return { value: value as string, next };
}

function unescapeZeros(raw: Buffer): string {
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    bytes.push(raw[i]!);
    if (raw[i] === 0) i++;
  }
  return Buffer.from(bytes).toString('utf8');
}

export function keyGroupOfRow(bytes: Uint8Array): number {
  return (bytes[0]! << 8) | bytes[1]!;
}

export function stateIdOfRow(bytes: Uint8Array): number {
  return (bytes[2]! << 8) | bytes[3]!;
}
