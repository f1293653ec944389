import type { Source } from '../core/types.js';
import { ArrayReader } from '../task/arrayReader.js';
import { fromSplits } from './fromSplits.js';
import { checkSplitCount, indexRanges, positionOf, rangeOf, rangePosition, rangeStatesAt } from './sourceInternals.js';

/**
 * A replayable source over an array: its offset is the index of the next record. With `{ splits: n }` the array
 * is cut into n index ranges, read side by side by the source's subtasks (`job.source(src, { parallelism })`).
 * @example job.source(fromArray([{ user: 'ann', n: 1 }, { user: 'bob', n: 2 }]), { uid: 'clicks' })
 */
export function fromArray<T>(records: readonly T[], options: { splits?: number } = {}): Source<T> {
  const name = `fromArray(${records.length} records)`;
  checkSplitCount(name, options.splits);
  if (options.splits === undefined) {
    return {
      name,
      replayable: true,
      open: ({ uid, restoredOffset }) => new ArrayReader(records, positionOf(restoredOffset, uid, name)),
    };
  }
  const count = options.splits;
  return fromSplits<T>(name, {
    list: () => indexRanges(records.length, count),
    open: (split, { uid, restoredOffset }) => new ArrayReader(records, rangePosition(split, restoredOffset, uid, name), rangeOf(split).to),
    fromOffset: (offset, splits, { uid }) => rangeStatesAt(offset, splits, uid, name),
  });
}
