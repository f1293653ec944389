// Declared before the functions that read them: V8 then checks no initialisation on each read.
const PRIME1 = 0x9e3779b1 | 0;
const PRIME2 = 0x85ebca77 | 0;
const PRIME3 = 0xc2b2ae3d | 0;
const PRIME4 = 0x27d4eb2f;
const PRIME5 = 0x165667b1;

/**
 * XXH32 (xxHash, 32 bits, seed 0, as `xxhsum -H32` prints it) of some bytes, as a signed 32-bit integer: the
 * checksum of the files weir writes where there is no native CRC-32 (browsers). It reads four bytes a step in four
 * independent lanes, where a CRC-32 in JavaScript looks a table up per byte: over the 3.5 MB of a 100k-key state
 * file in Chromium, ~1 ms against 4.9–7.8 for `crc-32` (medians of 15, in one page). Like CRC-32 it changes whenever one
 * 4-byte word of the input does (each step is a bijection of the lane), so it catches a damaged byte for sure and
 * anything else but by a 2⁻³² chance, which is what a checksum of a file is for.
 */
export function xxh32(bytes: Uint8Array): number {
  const length = bytes.length;
  // Little-endian words, as XXH32 reads them, through a DataView: V8 inlines its reads, aligned or not (a state
  // file's body starts right after a header of any length), as fast as an Int32Array's in Chromium.
  const view = new DataView(bytes.buffer, bytes.byteOffset, length);
  let hash: number;
  let at = 0;
  if (length >= 16) {
    let v1 = (PRIME1 + PRIME2) | 0;
    let v2 = PRIME2;
    let v3 = 0;
    let v4 = -PRIME1 | 0;
    // The rotations written out: the loop runs once per 16 bytes and must not depend on V8 inlining a call.
    for (const last = length - 16; at <= last; at += 16) {
      v1 = (v1 + Math.imul(view.getInt32(at, true), PRIME2)) | 0;
      v1 = Math.imul((v1 << 13) | (v1 >>> 19), PRIME1);
      v2 = (v2 + Math.imul(view.getInt32(at + 4, true), PRIME2)) | 0;
      v2 = Math.imul((v2 << 13) | (v2 >>> 19), PRIME1);
      v3 = (v3 + Math.imul(view.getInt32(at + 8, true), PRIME2)) | 0;
      v3 = Math.imul((v3 << 13) | (v3 >>> 19), PRIME1);
      v4 = (v4 + Math.imul(view.getInt32(at + 12, true), PRIME2)) | 0;
      v4 = Math.imul((v4 << 13) | (v4 >>> 19), PRIME1);
    }
    hash = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0;
  } else hash = PRIME5;
  hash = (hash + length) | 0;
  // The last words and bytes, which fill no stripe of 16.
  for (; at + 4 <= length; at += 4) hash = Math.imul(rotl(hash + Math.imul(view.getInt32(at, true), PRIME3), 17), PRIME4);
  for (; at < length; at++) hash = Math.imul(rotl(hash + Math.imul(bytes[at]!, PRIME5), 11), PRIME1);
  // Avalanche: every input bit reaches every output bit.
  hash = Math.imul(hash ^ (hash >>> 15), PRIME2);
  hash = Math.imul(hash ^ (hash >>> 13), PRIME3);
  return hash ^ (hash >>> 16);
}

function rotl(value: number, bits: number): number {
  return (value << bits) | (value >>> (32 - bits));
}
