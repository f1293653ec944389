import type { Source } from '../core/types.js';
import { ArrayReader } from '../task/arrayReader.js';
import { positionOf } from './sourceInternals.js';

/**
 * A replayable source over an array: its offset is the index of the next record.
 * @example job.source(fromArray([{ user: 'ann', n: 1 }, { user: 'bob', n: 2 }]), { uid: 'clicks' })
 */
export function fromArray<T>(records: readonly T[]): Source<T> {
  const name = `fromArray(${records.length} records)`;
  return {
    name,
    replayable: true,
    open: ({ uid, restoredOffset }) => new ArrayReader(records, positionOf(restoredOffset, uid, name)),
  };
}
