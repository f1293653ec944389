/**
 * Redis stream entry ids (`<milliseconds>-<sequence>`), ordered as the server orders them. Both parts are decimal
 * integers without leading zeros that may exceed 2^53, so they are compared as digit strings (the longer is the
 * larger), which also costs no allocation on the read path; `0-0` is before every entry.
 */
const ENTRY_ID = /^(0|[1-9]\d*)-(0|[1-9]\d*)$/;

/** The start of every stream: reading after it reads the first entry. */
export const STREAM_START = '0-0';

/**
 * Negative, zero or positive as `a` is before, equal to or after `b` (both entry ids).
 * @example compareEntryIds('1-2', '1-10') < 0
 */
export function compareEntryIds(a: string, b: string): number {
  const aDash = a.indexOf('-');
  const bDash = b.indexOf('-');
  return compareDigits(a.slice(0, aDash), b.slice(0, bDash)) || compareDigits(a.slice(aDash + 1), b.slice(bDash + 1));
}

/** Whether `id` is a stream entry id (what a checkpoint must hold as a split's offset). */
export function isEntryId(id: unknown): id is string {
  return typeof id === 'string' && ENTRY_ID.test(id);
}

/**
 * The millisecond part of an entry id: the server's clock when `XADD` with `*` made it, the event time of an entry
 * that carries none of its own.
 * @example entryIdTime('1700000000000-3') === 1700000000000
 */
export function entryIdTime(id: string): number {
  return Number(id.slice(0, id.indexOf('-')));
}

function compareDigits(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
