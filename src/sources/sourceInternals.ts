import { CheckpointCorruptedError } from '../core/errors.js';
import type { Json } from '../core/types.js';

/** A restored offset that counts records: 0 on a fresh start, else a non-negative integer. */
export function positionOf(restoredOffset: Json | undefined, uid: string, name: string): number {
  if (restoredOffset === undefined) return 0;
  if (typeof restoredOffset !== 'number' || !Number.isInteger(restoredOffset) || restoredOffset < 0) {
    throw new CheckpointCorruptedError(`source '${uid}' (${name}): saved offset ${JSON.stringify(restoredOffset)} is not a record count`);
  }
  return restoredOffset;
}
