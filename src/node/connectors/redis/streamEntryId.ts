/**
 * Redis stream entry ids (`<milliseconds>-<sequence>`), ordered as the server orders them. Both parts may exceed
 * 2^53, so they are compared as bigints; the id `0-0` is before every entry.
 */
const ENTRY_ID = /^(\d+)-(\d+)$/;

/** The start of every stream: reading after it reads the first entry. */
export const STREAM_START = '0-0';

/**
 * Negative, zero or positive as `a` is before, equal to or after `b`.
 * @example compareEntryIds('1-2', '1-10') < 0
 */
export function compareEntryIds(a: string, b: string): number {
  const [ams, aseq] = parts(a);
  const [bms, bseq] = parts(b);
  if (ams !== bms) return ams < bms ? -1 : 1;
  return aseq === bseq ? 0 : aseq < bseq ? -1 : 1;
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
  return Number(parts(id)[0]);
}

function parts(id: string): [bigint, bigint] {
  const match = ENTRY_ID.exec(id);
  if (!match) throw new RangeError(`'${id}' is not a Redis stream entry id`);
  return [BigInt(match[1]!), BigInt(match[2]!)];
}
