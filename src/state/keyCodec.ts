import { InvalidKeyError } from '../core/errors.js';
import type { Key } from '../core/types.js';

/** Keys in snapshots are JSON: strings, numbers and booleans as they are, bigints as `{ "$bigint": "…" }`. */
export function encodeKey(key: Key): unknown {
  return typeof key === 'bigint' ? { $bigint: key.toString() } : key;
}

export function decodeKey(encoded: unknown): Key {
  if (typeof encoded === 'string' || typeof encoded === 'number' || typeof encoded === 'boolean') return encoded;
  if (encoded !== null && typeof encoded === 'object' && typeof (encoded as { $bigint?: unknown }).$bigint === 'string') {
    const text = (encoded as { $bigint: string }).$bigint;
    try {
      return BigInt(text);
    } catch {
      throw new InvalidKeyError(`a snapshot holds a bigint key that is not an integer: ${JSON.stringify(text).slice(0, 200)}`);
    }
  }
  throw new InvalidKeyError(`a snapshot holds a key that is not a string, number, boolean or bigint: ${JSON.stringify(encoded)}`);
}

/** Rejects keys that cannot be compared by value, with the operator's uid in the message. */
export function checkKey(key: unknown, uid: string): asserts key is Key {
  const type = typeof key;
  if (type === 'string' || type === 'boolean' || type === 'bigint' || (type === 'number' && Number.isFinite(key))) return;
  throw new InvalidKeyError(
    `operator '${uid}': keyBy returned ${type === 'number' ? String(key) : type === 'object' ? (key === null ? 'null' : 'an object') : type}; ` +
      'keys must be strings, finite numbers, booleans or bigints (for a composite key, join its parts into a string)',
  );
}
