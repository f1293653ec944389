// Seeded mutators for the fuzz tests (test/faults/fuzz.test.ts): byte-level mutations of whole files (bit flips,
// truncation, extension, random bytes, spliced hostile tokens) and structure-aware mutations of decoded JSON values
// (huge numbers and lengths, wrong types, deep nesting, `__proto__` / `constructor` keys), so that inputs get past
// checksums and reach the code that interprets them.

import type { Random } from './random';

export type { Random };

export const int = (next: Random, n: number) => Math.floor(next() * n);
export const pick = <T>(next: Random, items: readonly T[]): T => items[int(next, items.length)]!;

/** JSON text nested `depth` levels deep: `[[[…]]]` or `{"a":{"a":…}}`. */
export function deepJson(depth: number, kind: 'array' | 'object' = 'array'): string {
  return kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** Values that break assumptions: parsed from JSON so that `__proto__` is an own key, as a decoder would see it. */
const HOSTILE_JSON = [
  '{"__proto__":{"polluted":"yes"}}',
  '{"constructor":{"prototype":{"polluted":"yes"}}}',
  '{"__proto__":[],"length":1e9}',
  '{"$bigint":"not-a-number"}',
  '{"$bigint":"123456789012345678901234567890"}',
  '{"$superjson":{"json":{"a":1},"meta":{"values":{"a":["map"]}}}}',
  '{"$superjson":{"json":1,"meta":{"values":["class"]}}}',
  '{"$superjson":{"json":{},"meta":{"values":{"__proto__.polluted":["set"]}}}}',
  '{"json":{"__proto__":{"polluted":"yes"}},"meta":{"referentialEqualities":{"__proto__":["polluted"]}}}',
  '{"json":[1],"meta":{"values":{"0":["custom","x"]}}}',
  '[1e308,-1e308,5e-324]',
  '"\\u0000\\ud800"',
];
const HOSTILE_NUMBERS = [-1, 0, 1, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1e308, -0, 0.5, 1e21, 32768, 65536, 127, 128];

/** A value of a random hostile kind. */
export function hostileValue(next: Random): unknown {
  switch (int(next, 9)) {
    case 0:
      return pick(next, HOSTILE_NUMBERS);
    case 1:
      return JSON.parse(pick(next, HOSTILE_JSON));
    case 2:
      return pick(next, [null, true, false, '', 'x', '..', '../../etc/passwd', '/', 'a/b', '\u0000', 'chk-1', '_metadata']);
    case 3:
      return JSON.parse(deepJson(pick(next, [50, 300, 1_500]), pick(next, ['array', 'object'] as const)));
    case 4:
      return [];
    case 5:
      return {};
    case 6:
      return Array.from({ length: int(next, 5) }, () => pick(next, HOSTILE_NUMBERS));
    case 7:
      return 'x'.repeat(int(next, 3) === 0 ? 100_000 : 10);
    default:
      return [pick(next, HOSTILE_NUMBERS), 'k', JSON.parse(pick(next, HOSTILE_JSON))];
  }
}

/** Every container path of a JSON value, for picking a node to mutate. */
function paths(value: unknown, limit: number, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  if (out.length >= limit) return out;
  out.push(at);
  // Deep values (a hostile value nested 1,500 levels) are mutated near their top only.
  if (at.length > 40) return out;
  if (Array.isArray(value)) value.forEach((child, i) => paths(child, limit, [...at, i], out));
  else if (value !== null && typeof value === 'object') for (const key of Object.keys(value)) paths((value as Record<string, unknown>)[key], limit, [...at, key], out);
  return out;
}

/** A structurally mutated copy of a JSON value: 1–3 nodes replaced, removed, retyped or given hostile keys. */
export function mutateJson(value: unknown, next: Random): unknown {
  const root = { v: structuredClone(value) as unknown };
  for (let round = 1 + int(next, 3); round > 0; round--) {
    const all = paths(root.v, 5_000).map((p) => ['v', ...p]);
    const path = pick(next, all);
    const parent = path.slice(0, -1).reduce<unknown>((node, key) => (node as Record<string, unknown>)[key as string], root) as Record<string | number, unknown>;
    const key = path[path.length - 1]!;
    const current = parent[key];
    switch (int(next, 6)) {
      case 0:
        if (Array.isArray(parent)) parent.splice(key as number, 1);
        else delete parent[key];
        break;
      case 1:
        if (Array.isArray(current)) current.push(hostileValue(next));
        else if (current !== null && typeof current === 'object') Object.defineProperty(current, pick(next, ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty']), { value: hostileValue(next), enumerable: true, writable: true, configurable: true });
        else parent[key] = hostileValue(next);
        break;
      case 2:
        parent[key] = typeof current === 'number' ? pick(next, HOSTILE_NUMBERS) : typeof current === 'string' ? pick(next, ['', `${current}x`, '__proto__', '../x']) : hostileValue(next);
        break;
      case 3:
        // Swap types: a list becomes an object with the same entries, an object a list.
        parent[key] = Array.isArray(current) ? Object.assign({}, current) : current !== null && typeof current === 'object' ? Object.values(current) : [current];
        break;
      default:
        parent[key] = hostileValue(next);
    }
  }
  return root.v;
}

const encoder = new TextEncoder();
const TOKENS = ['{"__proto__":{"polluted":1}}', '99999999999999999999999', '-1', '1e309', deepJson(5_000), '\u0000', '"', '\\', '\n', 'null', '{}', '[]'].map((t) => encoder.encode(t));

/** A byte-level mutation: bit flips, truncation, extension, random bytes, spliced tokens, a huge length field. */
export function mutateBytes(bytes: Uint8Array, next: Random): Uint8Array {
  const copy = () => bytes.slice();
  switch (int(next, 8)) {
    case 0: {
      const out = copy();
      for (let n = 1 + int(next, 8); n > 0 && out.length > 0; n--) out[int(next, out.length)]! ^= 1 << int(next, 8);
      return out;
    }
    case 1:
      return bytes.slice(0, int(next, bytes.length));
    case 2: {
      const extra = Uint8Array.from({ length: 1 + int(next, 64) }, () => int(next, 256));
      const out = new Uint8Array(bytes.length + extra.length);
      out.set(bytes);
      out.set(extra, bytes.length);
      return out;
    }
    case 3:
      return Uint8Array.from({ length: int(next, 512) }, () => int(next, 256));
    case 4: {
      const token = pick(next, TOKENS);
      const at = int(next, bytes.length + 1);
      const out = new Uint8Array(bytes.length + token.length);
      out.set(bytes.subarray(0, at));
      out.set(token, at);
      out.set(bytes.subarray(at), at + token.length);
      return out;
    }
    case 5: {
      // A header that claims a huge or negative payload length.
      const text = new TextDecoder().decode(bytes);
      return encoder.encode(text.replace(/"length":\d+/, `"length":${pick(next, ['1e308', '-1', '9007199254740993', '4294967296', '"12"'])}`));
    }
    case 6: {
      const out = copy();
      const at = int(next, out.length);
      out.fill(int(next, 256), at, Math.min(out.length, at + 1 + int(next, 32)));
      return out;
    }
    case 7:
      return encoder.encode(`${pick(next, ['', '{"weir":"state","version":1,"length":2,"crc32":0}\n', '{"weir":"metadata","version":2}\n'])}{}`);
    default:
      return bytes;
  }
}

/** Whether anything was written onto the shared prototypes (a prototype pollution). */
export function pollution(): string | undefined {
  const polluted = Object.keys(Object.prototype).concat(Object.keys(Array.prototype), Object.keys(Function.prototype));
  if (polluted.length > 0 || ({} as Record<string, unknown>).polluted !== undefined) return `prototype polluted: ${polluted.join(', ') || 'polluted'}`;
  return undefined;
}
