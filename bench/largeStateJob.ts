import { rmSync } from 'node:fs';
import { createJob, forEach, fromIterable, heapStateBackend, keyBy, reduce } from 'weir';
import { fsCheckpointStorage, lmdbStateBackend } from 'weir/node';

/**
 * The child process of `large-state/heap-limit`, run under `node --max-old-space-size=256`:
 * `largeStateJob.ts <heap|lmdb> <checkpoint dir> <keys>`. Sums one event per key over `keys` distinct keys with
 * checkpointing on, then restores a second job from the checkpoint the first one left. Prints `ok` when both
 * finished; an out-of-memory death exits non-zero without it.
 */
const [backendName, dir, keyArg] = process.argv.slice(2);
const KEYS = Number(keyArg);

function* events(): Generator<{ key: string; n: number }> {
  for (let i = 0; i < KEYS; i++) yield { key: `key-${i}`, n: 1 };
}

const backend = () => (backendName === 'lmdb' ? lmdbStateBackend() : heapStateBackend());
const run = (restore?: 'latest') => {
  const job = createJob({ name: 'heap-limit', stateBackend: backend(), checkpoints: { storage: fsCheckpointStorage(dir!) }, chunkSize: 10_000 });
  job.source(fromIterable(events()), { uid: 'events' }).pipe(
    keyBy((e) => e.key),
    reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
    forEach(() => undefined),
  );
  return job.start(restore ? { restore } : {}).done;
};

try {
  await run();
  const restored = await run('latest');
  console.log(restored.restoredFrom ? 'ok' : 'not restored');
} finally {
  rmSync(dir!, { recursive: true, force: true });
}
