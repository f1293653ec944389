import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createJob, keyBy, reduce, sinkTo, union, type CheckpointStats } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { addEvents, makeEvents, noop, perSecond, repeating, sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const countingSink = { name: 'count', open: () => ({ write: noop, finish: noop, abort: noop }) };

interface UnionRun {
  eventsPerSecond: number;
  checkpoints: readonly CheckpointStats[];
}

/** union(a, b) → keyBy → reduce, `perInput` records per input, fs checkpoints every `interval` ms or none. */
async function unionRun(events: readonly KeyedEvent[], perInput: number, interval: number | undefined, skew = 1): Promise<UnionRun> {
  const dir = interval === undefined ? undefined : await mkdtemp(join(tmpdir(), 'weir-bench-'));
  const job = createJob({
    name: 'bench-alignment',
    checkpoints: dir === undefined ? undefined : { storage: fsCheckpointStorage(dir), interval },
  });
  union(job.source(repeating(events, perInput), { uid: 'a' }), job.source(repeating(events, perInput, skew), { uid: 'b' })).pipe(
    keyBy((e: KeyedEvent) => e.key),
    reduce(addEvents, { uid: 'sum' }),
    sinkTo(countingSink, { uid: 'out' }),
  );
  const start = performance.now();
  const result = await job.start().done;
  const ms = performance.now() - start;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  return { eventsPerSecond: perSecond(2 * perInput, ms), checkpoints: result.checkpoints };
}

/** 2-input union into a keyed reduce over 10k keys: checkpoints every 100 ms vs off, side by side. */
async function unionOnVsOff(): Promise<Result[]> {
  const keys = 10_000;
  // Long enough (≈ 2-3 s) that the periodic checkpoints, not the job's start and its final checkpoint, are measured.
  const perInput = 8_000_000;
  const events = makeEvents(keys * 20, keys);
  const periodic: number[] = [];
  const best = await sideBySide(
    {
      off: async () => (await unionRun(events, perInput, undefined)).eventsPerSecond,
      on: async () => {
        const run = await unionRun(events, perInput, 100);
        periodic.push(run.checkpoints.filter((c) => !c.final).length);
        return run.eventsPerSecond;
      },
    },
    { rounds: 2, best: 'max' },
  );
  const name = 'alignment/union-checkpointing-on-vs-off';
  return [
    { name: `${name}/on`, value: best.on, unit: 'events/s' },
    { name: `${name}/off`, value: best.off, unit: 'events/s' },
    { name: `${name}/periodic-checkpoints`, value: Math.min(...periodic), unit: 'count' },
    { name, value: best.on / best.off, unit: 'ratio', bar: { op: '>=', value: 0.8 } },
  ];
}

/**
 * Input b delivers 1/16 of a chunk per read while a delivers full chunks (1024): the most records the union held
 * back during one alignment, and the longest alignment, over a run with checkpoints every 50 ms.
 */
async function maxHeldRecords(): Promise<Result[]> {
  const events = makeEvents(200_000, 10_000);
  const run = await unionRun(events, 1_000_000, 50, 1 / 16);
  const union = run.checkpoints.flatMap((c) => c.operators.filter((op) => op.uid.startsWith('union')));
  return [
    { name: 'alignment/max-held-records', value: Math.max(0, ...union.map((op) => op.heldRecords)), unit: 'records' },
    { name: 'alignment/max-alignment-ms', value: Math.max(0, ...union.map((op) => op.alignmentMs)), unit: 'ms' },
    { name: 'alignment/skewed-checkpoints', value: run.checkpoints.length, unit: 'count' },
  ];
}

export async function alignment(): Promise<Result[]> {
  return [...(await unionOnVsOff()), ...(await maxHeldRecords())];
}
