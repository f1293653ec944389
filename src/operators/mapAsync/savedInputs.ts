import type { Json } from '../../core/types.js';
import { autoSerializer } from '../../state/serializers.js';

/** A record saved with its timestamp, as a checkpoint holds it. */
type SavedInput = [value: Json, timestamp: number | null];

const records = autoSerializer<unknown>();

/**
 * The operator state of one mapAsync instance at a barrier: the records whose results it has not emitted (in flight
 * or waiting), in arrival order, as Flink's AsyncWaitOperator saves its queue. Undefined when there are none (no
 * state file at all). Watermarks are not saved: after a restore the sources' next watermarks cover them.
 */
export function saveInputs(pending: readonly { value: unknown; timestamp: number | undefined }[]): Json | undefined {
  if (pending.length === 0) return undefined;
  return { inputs: pending.map(({ value, timestamp }): SavedInput => [records.encode(value) as Json, timestamp ?? null]) };
}

/** Every record the instances of the checkpoint restored saved, whatever the parallelism then, in instance order. */
export function restoredInputs(saved: readonly Json[]): { value: unknown; timestamp: number | undefined }[] {
  const inputs: { value: unknown; timestamp: number | undefined }[] = [];
  for (const state of saved) {
    for (const [value, timestamp] of (state as { inputs?: SavedInput[] } | null)?.inputs ?? []) {
      inputs.push({ value: records.decode(value, 1), timestamp: timestamp ?? undefined });
    }
  }
  return inputs;
}
