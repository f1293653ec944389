import type { ShapedEntries } from '../core/types.js';
import { RICH } from './serializers.js';
import { ASIDE } from './setAsideValues.js';

/**
 * Values written as rows of their fields (`KeyedStatePayload.shaped`): a full snapshot of 10⁶ `{ key, n }` values
 * spent ~100 ms walking each value's tree to check it is plain JSON (`autoSerializer`) and ~230 ms stringifying the
 * objects; as rows of primitives, checked while they are copied, both took ~175 ms (alternating in one process, a
 * loaded 2-core machine). The check here is the one `autoSerializer` makes of such a value, so a value that passes
 * it is one that `auto` and `json` keep as it is, and reads back equal.
 */

/** A field's value that a row can hold: what JSON gives back equal (no `-0`, which `auto` leaves to superjson). */
function isPrimitiveJson(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'boolean' || value === null || (typeof value === 'number' && Number.isFinite(value) && (value !== 0 || 1 / value > 0));
}

/** Field names a row cannot stand for: what makes an object not plain for `auto`, or not rebuilt by assignment. */
function isReservedField(name: string): boolean {
  return name === RICH || name === ASIDE || name === '__proto__';
}

/** The fields of `value` when it is a plain object of at least one field, each with a primitive value; else undefined. */
export function shapeOf(value: unknown): string[] | undefined {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  const fields: string[] = [];
  for (const name in value) {
    if (isReservedField(name) || !isPrimitiveJson((value as Record<string, unknown>)[name])) return undefined;
    fields.push(name);
  }
  return fields.length === 0 ? undefined : fields;
}

/**
 * Writes `key` and the fields of `value` into `rows` from `at` when `value` has exactly `fields` (of `shapeOf`),
 * and returns where the row ends; returns -1, leaving what it wrote past `at` for the caller to cut off, when it has
 * not. With `at` the length of `rows`, it only appends, so a packed array stays packed (see `HeapSnapshotStrategy`).
 */
export function putRow(rows: unknown[], at: number, key: unknown, value: unknown, fields: readonly string[]): number {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return -1;
  let end = at;
  rows[end++] = key;
  let field = 0;
  for (const name in value) {
    const item = (value as Record<string, unknown>)[name];
    if (name !== fields[field] || !isPrimitiveJson(item)) return -1;
    rows[end++] = item;
    field++;
  }
  return field === fields.length ? end : -1;
}

/**
 * Lists that `expandShaped` appended entries to, with the index of the first entry it appended: every entry from
 * there on holds a plain object of primitive fields built from a row, which a serializer that keeps plain values as
 * they are (`plainAsIs`) would give back unchanged. A restore therefore puts those values in its tables without
 * calling the serializer, which would read each value once more: at 10⁶ keys the values are far out of the CPU
 * caches by then, and that read cost ~130 ns a key (of ~900), against ~10 at 10⁴.
 */
const rowsStart = new WeakMap<readonly unknown[], number>();

/** Where the entries built from rows start in `flat` (its length when none were: see `rowsStart`). */
export function rowEntriesFrom(flat: readonly unknown[]): number {
  return rowsStart.get(flat) ?? flat.length;
}

/** Appends the entries of `shaped` to `flat` as `state, key, value` triples, each value an object built anew. */
export function expandShaped(shaped: readonly ShapedEntries[], flat: unknown[]): void {
  // Sized once and filled by index: grown by `push`, a list of 10⁶ entries is copied at every growth.
  let at = flat.length;
  if (!rowsStart.has(flat)) rowsStart.set(flat, at);
  let entries = 0;
  for (const { fields, rows } of shaped) entries += rows.length / (fields.length + 1);
  flat.length = at + 3 * entries;
  for (const { state, fields, rows } of shaped) {
    const width = fields.length + 1;
    for (let i = 0; i < rows.length; i += width) {
      const value: Record<string, unknown> = {};
      for (let field = 0; field < fields.length; field++) value[fields[field]!] = rows[i + 1 + field];
      flat[at++] = state;
      flat[at++] = rows[i];
      flat[at++] = value;
    }
  }
}

/**
 * What is wrong with the `shaped` lists of a payload of `states` states, or undefined when they are well formed:
 * each names a declared state, at least one field (none reserved) and whole rows.
 */
export function shapedProblem(shaped: unknown, states: number): string | undefined {
  if (!Array.isArray(shaped)) return 'its keyed shaped entries are not a list';
  for (const [index, entries] of shaped.entries()) {
    const { state, fields, rows } = (entries ?? {}) as { state?: unknown; fields?: unknown; rows?: unknown };
    const validFields = Array.isArray(fields) && fields.length > 0 && fields.every((name) => typeof name === 'string' && !isReservedField(name));
    const valid = Number.isInteger(state) && (state as number) >= 0 && (state as number) < states && validFields && Array.isArray(rows) && rows.length % (fields.length + 1) === 0;
    if (!valid) return `shaped entries #${index} in its keyed state are malformed or name an undeclared state`;
  }
  return undefined;
}
