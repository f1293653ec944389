import type { KeyGroupRange, KeyedStatePayload } from '../core/types.js';
import { heapStateBackend } from './heap/heapStateBackend.js';

/**
 * The keyed state a restore from `payloads` ends up with, as one full payload: each key's value of the last payload
 * that wrote it, less the keys a later one removed. `payloads` come in restore order (`restoreOrder`: an incremental
 * checkpoint's base, then its deltas), and only entries in `range` count. Values stay encoded, so no serializer is
 * needed.
 *
 * The payloads are restored into a heap backend and snapshotted, so that tools reading a checkpoint without the job
 * (the State Processor API, the inspector, queries of a checkpoint) see exactly what a restoring job sees, with no
 * merge of their own. Restored state nobody reads stays encoded in the heap backend, so this only collects entries.
 * @example restoredPayload([base, delta], { uid: 'per-user', maxParallelism: 128, range: { start: 0, end: 127 } })
 */
export function restoredPayload(payloads: readonly KeyedStatePayload[], options: { uid: string; maxParallelism: number; range: KeyGroupRange }): KeyedStatePayload {
  const { uid, maxParallelism, range } = options;
  const backend = heapStateBackend().createKeyedBackend({ uid, maxParallelism, keyGroupRange: range });
  try {
    backend.restore([...payloads]);
    const restored = backend.snapshot().materialize();
    // A state the payloads declare without entries in `range` is still one of the operator's states.
    const states = [...restored.states];
    const names = new Set(states.map((meta) => meta.name));
    for (const meta of payloads.flatMap((payload) => payload.states)) {
      if (names.has(meta.name)) continue;
      names.add(meta.name);
      states.push(meta);
    }
    return states.length === restored.states.length ? restored : { ...restored, states };
  } finally {
    backend.dispose();
  }
}
