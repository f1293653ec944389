import type { Json, KeyedStatePayload, SnapshotEntry, StateMeta } from '../core/types.js';
import type { OperatorRole } from '../storage/layout.js';
import { keyGroupRangeFor } from '../core/keyGroups.js';
import { forEachPayloadEntry } from '../state/payloadEntries.js';

// The operators of a savepoint being written: their states' entries, split by the subtask that will own them.

/**
 * One keyed state being written: its meta and its encoded payload entries `[state, key, value, namespace?]`, already
 * split by the instance (subtask) of its operator that owns their key group, so that writing only concatenates.
 */
export interface StateDraft {
  meta: StateMeta;
  /** Its position among the operator's states (the `state` of its entries); states are replaced in place, never removed. */
  index: number;
  /** Entries by subtask, each in the order they were added. */
  bySubtask: SnapshotEntry[][];
}

export interface OperatorDraft {
  role: OperatorRole;
  parallelism: number;
  /** Operator (non-keyed) state per instance, as saved. */
  operatorStates: (Json | undefined)[];
  states: Map<string, StateDraft>;
}

/** A new draft of state `meta` in `operator`, at the position of the state of that name it replaces, if any. */
export function newState(operator: OperatorDraft, meta: StateMeta): StateDraft {
  const index = operator.states.get(meta.name)?.index ?? operator.states.size;
  return { meta, index, bySubtask: Array.from({ length: operator.parallelism }, () => []) };
}

/** The subtask of `parallelism` owning each key group (the inverse of `keyGroupRangeFor`). */
export function subtasksByKeyGroup(parallelism: number, maxParallelism: number): Uint32Array {
  const subtaskOf = new Uint32Array(maxParallelism);
  for (let subtask = 0; subtask < parallelism; subtask++) {
    const { start, end } = keyGroupRangeFor(subtask, parallelism, maxParallelism);
    subtaskOf.fill(subtask, start, end + 1);
  }
  return subtaskOf;
}

/** One instance's keyed payload: its entries unbucketed and flat (format version 2), state by state, in the order they were added. */
export function keyedPayload(operator: OperatorDraft, subtask: number, range: { start: number; end: number }): KeyedStatePayload {
  const states = Array.from(operator.states.values());
  const flat: unknown[] = [];
  const flatNamespaced: unknown[] = [];
  states.forEach((state, position) => {
    // Entries are written at their state's position in `states` (should it ever differ from their index).
    for (const [, key, value, namespace] of state.bySubtask[subtask] ?? []) {
      if (namespace === undefined) flat.push(position, key, value);
      else flatNamespaced.push(position, key, value, namespace);
    }
  });
  const payload: KeyedStatePayload = { states: states.map((state) => state.meta), keyGroups: [], flat, range: [range.start, range.end] };
  return flatNamespaced.length === 0 ? payload : { ...payload, flatNamespaced };
}

/** Adds a saved keyed payload's entries to an operator draft, by state, split by the subtask owning their key group. */
export function addPayload(draft: OperatorDraft, payload: KeyedStatePayload, maxParallelism: number): void {
  const subtaskOf = subtasksByKeyGroup(draft.parallelism, maxParallelism);
  const states = payload.states.map((meta) => {
    let state = draft.states.get(meta.name);
    if (!state) draft.states.set(meta.name, (state = newState(draft, meta)));
    return state;
  });
  forEachPayloadEntry(payload, { maxParallelism, keyGroups: true }, ([index, key, value, namespace], group) => {
    const state = states[index]!;
    state.bySubtask[subtaskOf[group]!]!.push(namespace === undefined ? [state.index, key, value] : [state.index, key, value, namespace]);
  });
}
