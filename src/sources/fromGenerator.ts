import { JobDefinitionError } from '../core/errors.js';
import type { Source } from '../core/types.js';
import { GeneratorReader } from '../task/generatorReader.js';
import { fromSplits } from './fromSplits.js';
import { checkSplitCount, indexRanges, positionOf, rangeOf, rangePosition, rangeStatesAt } from './sourceInternals.js';

/**
 * A replayable source of `count` records made by `generate(index)` (Flink's `DataGeneratorSource`): test data,
 * load generators, benchmarks. Nothing is held in memory, and with `{ splits: n }` the indexes are cut into n ranges,
 * so that each subtask (each worker, with `startJob`) makes only the records of its own ranges, where `fromArray`
 * has every worker build the whole array. `generate` must give the same record for the same index every time: a
 * restore makes the records after the checkpoint's offset again.
 * @example job.source(fromGenerator(1_000_000, (i) => ({ user: `u${i % 1000}`, n: i }), { splits: 4 }), { uid: 'load' })
 */
export function fromGenerator<T>(count: number, generate: (index: number) => T, options: { splits?: number } = {}): Source<T> {
  const name = `fromGenerator(${count} records)`;
  if (!(Number.isSafeInteger(count) && count >= 0)) throw new JobDefinitionError(`fromGenerator: count must be an integer ≥ 0, got ${String(count)}`);
  if (typeof generate !== 'function') throw new JobDefinitionError(`${name}: generate must be a function of the record's index`);
  checkSplitCount(name, options.splits);
  if (options.splits === undefined) {
    return {
      name,
      replayable: true,
      open: ({ uid, restoredOffset }) => new GeneratorReader(generate, positionOf(restoredOffset, uid, name, count), count),
    };
  }
  const splits = options.splits;
  return fromSplits<T>(name, {
    list: () => indexRanges(count, splits),
    open: (split, { uid, restoredOffset }) => new GeneratorReader(generate, rangePosition(split, restoredOffset, uid, name), rangeOf(split).to),
    fromOffset: (offset, all, { uid }) => rangeStatesAt(offset, all, uid, name),
  });
}
