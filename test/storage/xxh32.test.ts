import { describe, expect, it } from 'vitest';
import { CheckpointCorruptedError } from 'weir';
import { decodeFile } from '../../src/storage/fileFormat';
import { xxh32 } from '../../src/storage/xxh32';

const encoder = new TextEncoder();
const hex = (hash: number) => (hash >>> 0).toString(16).padStart(8, '0');

/** A file as weir writes it where there is no native CRC-32 (browsers): format version 4, an XXH32 checksum. */
function version4File(kind: string, payload: unknown, header: Record<string, unknown> = {}): Uint8Array {
  const body = encoder.encode(JSON.stringify(payload));
  const line = encoder.encode(`${JSON.stringify({ weir: kind, version: 4, length: body.length, xxh32: xxh32(body), ...header })}\n`);
  const file = new Uint8Array(line.length + body.length);
  file.set(line);
  file.set(body, line.length);
  return file;
}

describe('xxh32', () => {
  it('is XXH32 with seed 0 (the reference vectors, every tail length and stripes of 16)', () => {
    expect(hex(xxh32(encoder.encode('')))).toBe('02cc5d05');
    expect(hex(xxh32(encoder.encode('a')))).toBe('550d7456');
    expect(hex(xxh32(encoder.encode('abc')))).toBe('32d153ff');
    expect(hex(xxh32(encoder.encode('Nobody inspects the spammish repetition')))).toBe('e2293b2f');
  });

  it('reads the bytes of a view wherever it starts in its buffer', () => {
    const bytes = encoder.encode('Nobody inspects the spammish repetition'.repeat(50));
    for (const start of [1, 2, 3, 5]) {
      const shifted = new Uint8Array(bytes.length + start);
      shifted.set(bytes, start);
      expect(xxh32(shifted.subarray(start))).toBe(xxh32(bytes));
    }
  });

  it('changes with any one byte changed, in a stripe or in the tail', () => {
    const bytes = encoder.encode('x'.repeat(1003));
    const hash = xxh32(bytes);
    for (const at of [0, 7, 500, 995, 1001, 1002]) {
      const damaged = bytes.slice();
      damaged[at] = damaged[at]! ^ 0x01;
      expect(xxh32(damaged)).not.toBe(hash);
    }
  });
});

describe('a version-4 file (XXH32, as browsers write it)', () => {
  it('is read in Node', () => {
    const payload = { uid: 'sum', keyed: { states: [], keyGroups: [], flat: [0, 'ключ', { n: 1 }], range: [0, 127] } };
    expect(decodeFile('state', version4File('state', payload), 'chk-1/sum.0')).toEqual(payload);
  });

  it('with a damaged byte is a CheckpointCorruptedError naming it', () => {
    const file = version4File('metadata', { id: 12345 });
    file[file.length - 3] = file[file.length - 3]! + 1;
    expect(() => decodeFile('metadata', file, 'chk-1/_metadata')).toThrow(CheckpointCorruptedError);
    expect(() => decodeFile('metadata', file, 'chk-1/_metadata')).toThrow(/chk-1\/_metadata: checksum mismatch/);
  });

  it('is checked with XXH32 only: a CRC-32 in its header does not stand for it', () => {
    const file = encoder.encode(`${JSON.stringify({ weir: 'metadata', version: 4, length: 2, crc32: -1 })}\n{}`);
    expect(() => decodeFile('metadata', file, 'm')).toThrow(/checksum mismatch/);
  });
});
