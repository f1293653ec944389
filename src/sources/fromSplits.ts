import type { Source, SourceSplits } from '../core/types.js';
import { assignSplits } from '../task/splitEnumerator.js';
import { splitReaderFor } from '../task/splitReader.js';

/**
 * A replayable source over splits you describe (Flink's FLIP-27 `Source`): the job reads it with `parallelism`
 * subtasks, subtask i reading splits i, i + parallelism, … one after another, and saves each split's offset. Lay
 * the splits out by key and each subtask reads only its keys ("owned splits").
 * @example
 * const parts = [['a1', 'a2'], ['b1']];
 * const source = fromSplits<string>('parts', {
 *   list: () => parts.map((_, i) => ({ id: `part-${i}`, description: i })),
 *   open: (split, { restoredOffset }) => readerOf(parts[split.description as number]!, restoredOffset),
 * });
 */
export function fromSplits<T>(name: string, splits: SourceSplits<T>): Source<T> {
  return {
    name,
    replayable: true,
    splits,
    // Read without the job (as a plain reader): every split in turn, its offset the state of all of them.
    async open({ uid, restoredOffset }) {
      const [all] = assignSplits({
        uid,
        name,
        splits: await splits.list(),
        parallelism: 1,
        restored: restoredOffset === undefined ? [] : [restoredOffset],
        fromOffset: splits.fromOffset?.bind(splits),
      });
      return splitReaderFor(splits, uid, all!);
    },
  };
}
