import type { Key } from '../core/types.js';
import { compareKeys, encodeCursor } from './keyOrder.js';
import { DEFAULT_PAGE_SIZE, type KeyPage } from './stateQueries.js';

/**
 * One page of keys from pages over disjoint sets of key groups (a job's workers, a scale-out group's members, a
 * member's tasks), so that no key is in two: each page holds the smallest `limit` matching keys of its part, so the
 * smallest `limit` of all of them are the whole's. There are more keys when one part had more or the pages together
 * hold more than `limit`. The cursor is the last key's, as a single listing's is: any part can go on from it.
 * @example
 * mergeKeyPages([{ keys: ['a', 'c'] }, { keys: ['b'] }], 2); // { keys: ['a', 'b'], cursor: … after 'b' }
 */
export function mergeKeyPages(pages: readonly KeyPage[], limit: number = DEFAULT_PAGE_SIZE): KeyPage {
  const keys: Key[] = pages.flatMap((page) => page.keys).sort(compareKeys);
  const more = keys.length > limit || pages.some((page) => page.cursor !== undefined);
  if (!more) return { keys };
  const page = keys.slice(0, limit);
  return { keys: page, cursor: encodeCursor(page[page.length - 1]!) };
}
