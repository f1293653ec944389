// State entries on the LMDB backend: LMDB's own row count, read at a scrape without scanning the keys.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { memoryCheckpointStorage } from 'weir';
import { lmdbStateBackend } from 'weir/node';
import { pausableSource, readings, sumsJob } from '../../checkpoint/fixtures';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-lmdb-entries-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('weir_operator_state_entries on LMDB', () => {
  it('counts the rows of the keyed operator, in LMDB or still in its write buffers', async () => {
    const paused = pausableSource(readings, [50]);
    const { job } = sumsJob({ stateBackend: lmdbStateBackend({ path: dir }), checkpoints: { storage: memoryCheckpointStorage() } }, paused.source);
    const running = job.start();
    await paused.reached(50);
    await running.checkpoint();
    const sum = running.metrics.operators.find((o) => o.uid === 'sum')!;
    // 5 keys of one reducing state, each in LMDB, in a write buffer or both (approximate, as documented: a row in
    // both counts twice, and LMDB's bookkeeping rows count too).
    expect(sum.stateEntries).toBeGreaterThanOrEqual(5);
    expect(sum.stateEntries).toBeLessThan(20);
    paused.release(50);
    await running.done;
  });
});
