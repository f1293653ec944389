import { SideOutputElement, emitControl, type RecordTimestamp } from '../core/elements.js';
import type { Output } from './processFunction.js';

/**
 * The `out` of a process, co-process, broadcast or window function: records go to `emit`, and a side-output record
 * travels with them, stamped with the timestamp of the record being processed (or of the timer firing).
 */
export function output<R>(emit: (value: R) => void, record: RecordTimestamp): Output<R> {
  return { emit, side: (tag, value) => emitControl(emit, new SideOutputElement(tag.id, value, record.current)) };
}
