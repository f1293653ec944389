import { CheckpointCorruptedError, JobDefinitionError } from '../core/errors.js';
import type { Json, SourceSplit, SplitState } from '../core/types.js';

/** A restored offset that counts records: 0 on a fresh start, else a non-negative integer (at most `max`). */
export function positionOf(restoredOffset: Json | undefined, uid: string, name: string, max = Number.MAX_SAFE_INTEGER): number {
  if (restoredOffset === undefined) return 0;
  if (typeof restoredOffset !== 'number' || !Number.isInteger(restoredOffset) || restoredOffset < 0 || restoredOffset > max) {
    throw new CheckpointCorruptedError(`source '${uid}' (${name}): saved offset ${JSON.stringify(restoredOffset)} is not a record count`);
  }
  return restoredOffset;
}

/** The `splits` option of a source: a positive integer, or undefined for a source without splits. */
export function checkSplitCount(name: string, splits: number | undefined): void {
  if (splits !== undefined && !(Number.isInteger(splits) && splits >= 1)) {
    throw new JobDefinitionError(`${name}: splits must be an integer ≥ 1, got ${String(splits)}`);
  }
}

/** The records `[from, to)` an index-range split covers. */
export interface IndexRange {
  from: number;
  to: number;
}

/**
 * `count` records cut into `splits` contiguous index ranges of nearly equal size. A range's id names its bounds, so
 * a checkpoint of other ranges (another split count, another length) is refused rather than misread.
 */
export function indexRanges(count: number, splits: number): SourceSplit[] {
  return Array.from({ length: splits }, (_, k) => {
    const from = Math.floor((k * count) / splits);
    const to = Math.floor(((k + 1) * count) / splits);
    return { id: `[${from},${to})`, description: { from, to } };
  });
}

export function rangeOf(split: SourceSplit): IndexRange {
  return split.description as unknown as IndexRange;
}

/**
 * An index-range split's restored offset: the index of its next record, in the whole input (so that a single
 * reader's offset maps onto the ranges directly); a fresh split starts at `from`.
 */
export function rangePosition(split: SourceSplit, restoredOffset: Json | undefined, uid: string, name: string): number {
  const { from, to } = rangeOf(split);
  if (restoredOffset === undefined) return from;
  const position = positionOf(restoredOffset, uid, `${name} split ${split.id}`, to);
  if (position < from) throw new CheckpointCorruptedError(`source '${uid}' (${name}): saved offset ${position} lies before split ${split.id}`);
  return position;
}

/** What a single reader's offset (records read from the start) says of each index range. */
export function rangeStatesAt(offset: Json, splits: readonly SourceSplit[], uid: string, name: string): SplitState[] {
  const position = positionOf(offset, uid, name);
  return splits.map((split) => {
    const { from, to } = rangeOf(split);
    if (position >= to) return { id: split.id, offset: to, finished: true };
    return { id: split.id, offset: position > from ? position : null, finished: false };
  });
}
