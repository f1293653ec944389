import type { Source } from '../core/types.js';
import { ArrayReader } from '../task/arrayReader.js';
import { fromSplits } from './fromSplits.js';
import { positionOf } from './sourceInternals.js';

/**
 * A replayable source whose splits are the arrays given: part k is read by subtask k mod parallelism, so parts
 * that each hold some keys keep those keys on one subtask. A split's offset is the index of its next record.
 * @example job.source(fromArrays([evenUsers, oddUsers]), { uid: 'clicks', parallelism: 2 })
 */
export function fromArrays<T>(parts: readonly (readonly T[])[]): Source<T> {
  const name = `fromArrays(${parts.length} parts)`;
  return fromSplits<T>(name, {
    list: () => parts.map((part, i) => ({ id: `part-${i}`, description: { part: i, records: part.length } })),
    open(split, { uid, restoredOffset }) {
      const records = parts[(split.description as { part: number }).part]!;
      return new ArrayReader(records, positionOf(restoredOffset, uid, `${name} ${split.id}`));
    },
  });
}
