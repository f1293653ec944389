import { decodeKey, encodeKey } from '../state/keyCodec.js';
import type { Key } from '../core/types.js';
import { InvalidQueryError } from './queryErrors.js';

/**
 * The order in which queryable state lists keys, the same for every backend: booleans, then numbers and bigints by
 * value, then strings by UTF-16 code units. Paging with a cursor relies on it being total and stable.
 */
export function compareKeys(a: Key, b: Key): number {
  const rankA = rank(a);
  const rankB = rank(b);
  if (rankA !== rankB) return rankA - rankB;
  if (a < b) return -1;
  if (a > b) return 1;
  // 1 and 1n are different keys that compare equal: numbers first.
  return typeof a === typeof b ? 0 : typeof a === 'number' ? -1 : 1;
}

function rank(key: Key): number {
  switch (typeof key) {
    case 'boolean':
      return 0;
    case 'number':
    case 'bigint':
      return 1;
    default:
      return 2;
  }
}

/** An opaque cursor for the page after `key`: base64url of the key's JSON form. */
export function encodeCursor(key: Key): string {
  const bytes = new TextEncoder().encode(JSON.stringify(encodeKey(key)));
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function decodeCursor(cursor: string): Key {
  try {
    const binary = atob(cursor.replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
    return decodeKey(JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)));
  } catch (error) {
    throw new InvalidQueryError(`cursor ${JSON.stringify(cursor)} is not valid; pass the cursor of the previous page as it was returned`, { cause: error });
  }
}

/** Whether a value is a key weir can hold: a string, finite number, boolean or bigint. */
export function isKey(value: unknown): value is Key {
  const type = typeof value;
  return type === 'string' || type === 'boolean' || type === 'bigint' || (type === 'number' && Number.isFinite(value));
}
