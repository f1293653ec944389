import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createJob, heapStateBackend, keyBy, reduce, sinkTo, valueState, type KeyedStateBackend } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { encodeFile } from '../src/storage/fileFormat';
import { addEvents, makeEvents, perSecond, repeating, settleHeap, sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

interface RunFigures {
  eventsPerSecond: number;
  checkpoints: number;
  /** Longest time between two records reaching the sink (sampled every 64 records). */
  maxGapMs: number;
}

/** keyBy + reduce over `total` records, with fs checkpoints every `interval` ms, or none. */
async function keyedRun(events: readonly KeyedEvent[], total: number, interval: number | undefined): Promise<RunFigures> {
  const dir = interval === undefined ? undefined : await mkdtemp(join(tmpdir(), 'weir-bench-'));
  let count = 0;
  let last = 0;
  let maxGapMs = 0;
  const sink = {
    name: 'gap-meter',
    open: () => ({
      write() {
        if ((++count & 63) !== 0) return;
        const now = performance.now();
        if (last !== 0 && now - last > maxGapMs) maxGapMs = now - last;
        last = now;
      },
      finish: () => undefined,
      abort: () => undefined,
    }),
  };
  const start = performance.now();
  const job = createJob({
    name: 'bench-checkpointing',
    stateBackend: heapStateBackend(),
    checkpoints: dir === undefined ? undefined : { storage: fsCheckpointStorage(dir), interval },
  });
  job.source(repeating(events, total), { uid: 'events' }).pipe(keyBy((e) => e.key), reduce(addEvents, { uid: 'sum' }), sinkTo(sink, { uid: 'out' }));
  const result = await job.start().done;
  const ms = performance.now() - start;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  // The final checkpoint (taken when the input ends) is counted in the time but not as a periodic one.
  return { eventsPerSecond: perSecond(total, ms), checkpoints: result.checkpoints.filter((c) => !c.final).length, maxGapMs };
}

async function onVsOff(keys: number, total: number, interval: number, rounds: number, suffix: string, bar: boolean): Promise<Result[]> {
  const events = makeEvents(Math.min(total, 2_000_000, keys * 20), keys);
  const figures: Record<'on' | 'off', RunFigures[]> = { on: [], off: [] };
  const best = await sideBySide(
    {
      off: async () => {
        const run = await keyedRun(events, total, undefined);
        figures.off.push(run);
        return run.eventsPerSecond;
      },
      on: async () => {
        const run = await keyedRun(events, total, interval);
        figures.on.push(run);
        return run.eventsPerSecond;
      },
    },
    { rounds, best: 'max', warmup: false },
  );
  const checkpoints = Math.min(...figures.on.map((f) => f.checkpoints));
  const name = `checkpointing/throughput-on-vs-off${suffix}`;
  // The longest pause of the records, of each side's best run (as the throughputs are each side's best).
  const gapOn = Math.min(...figures.on.map((f) => f.maxGapMs));
  const gapOff = Math.min(...figures.off.map((f) => f.maxGapMs));
  return [
    { name: `${name}/on`, value: best.on, unit: 'events/s' },
    { name: `${name}/off`, value: best.off, unit: 'events/s' },
    { name: `${name}/periodic-checkpoints`, value: checkpoints, unit: 'count' },
    { name: `${name}/max-record-gap-on`, value: Math.max(...figures.on.map((f) => f.maxGapMs)), unit: 'ms' },
    { name: `${name}/max-record-gap-off`, value: Math.max(...figures.off.map((f) => f.maxGapMs)), unit: 'ms' },
    { name, value: best.on / best.off, unit: 'ratio', ...(bar ? { bar: { op: '>=' as const, value: 0.8 } } : {}) },
    {
      name: `checkpointing/max-record-gap-on-vs-off${suffix}`,
      value: gapOn / gapOff,
      unit: 'ratio',
      ...(bar && suffix === '-1M' ? { bar: { op: '<=' as const, value: 2 } } : {}),
    },
  ];
}

/** A heap backend holding one value state with `keys` keys, as a reduce operator's would. */
export function populatedBackend(keys: number): KeyedStateBackend {
  const backend = heapStateBackend().createKeyedBackend({ uid: 'sum', maxParallelism: 128, keyGroupRange: { start: 0, end: 127 } });
  const state = backend.getState(valueState<KeyedEvent>('reduce'));
  for (let i = 0; i < keys; i++) {
    const key = `k${i}`;
    backend.setCurrentKey(key);
    state.update({ key, n: i & 1023 });
  }
  return backend;
}

/**
 * The synchronous part of a barrier at 1M keys (what `keyedOperate`'s barrier handler runs before forwarding it:
 * `backend.snapshot()`) vs writing the full snapshot it stands for. The pause is sampled many times and its median
 * used for the ratio, so that one preemption by another process on a busy machine does not decide it; the longest
 * sample is recorded too.
 */
async function syncPause(): Promise<Result[]> {
  const backend = populatedBackend(1_000_000);
  const dir = await mkdtemp(join(tmpdir(), 'weir-bench-'));
  const storage = fsCheckpointStorage(dir);
  const pauses: number[] = [];
  let full = Infinity;
  for (let i = 0; i < 4; i++) {
    settleHeap();
    for (let j = 0; j < 25; j++) {
      const start = performance.now();
      const snapshot = backend.snapshot();
      pauses.push(performance.now() - start);
      snapshot.release();
    }
    const start = performance.now();
    const payload = backend.snapshot().materialize();
    await storage.write(`chk-${i}/sum`, encodeFile('state', payload));
    // The first round is a warm-up.
    if (i > 0) full = Math.min(full, performance.now() - start);
  }
  await rm(dir, { recursive: true, force: true });
  pauses.sort((a, b) => a - b);
  const median = pauses[pauses.length >> 1]!;
  return [
    { name: 'checkpointing/barrier-sync-pause-1M', value: median, unit: 'ms' },
    { name: 'checkpointing/barrier-sync-pause-1M-max', value: pauses[pauses.length - 1]!, unit: 'ms' },
    { name: 'checkpointing/full-snapshot-write-1M', value: full, unit: 'ms' },
    { name: 'checkpointing/sync-pause-vs-full-snapshot', value: median / full, unit: 'ratio', bar: { op: '<=', value: 0.01 } },
  ];
}

export async function checkpointing(): Promise<Result[]> {
  // BENCH_CHECKPOINTING=1M measures only the 1M-key job (for comparing versions back to back).
  if (process.env.BENCH_CHECKPOINTING === '1M') return onVsOff(1_000_000, 5_000_000, 2_000, 2, '-1M', true);
  const at100k = await onVsOff(100_000, 8_000_000, 500, 3, '', true);
  const at1M = await onVsOff(1_000_000, 5_000_000, 2_000, 2, '-1M', true);
  const pause = await syncPause();
  // What a barrier really costs the records behind it in a running job: the longest gap between records at the
  // sink, against the time the full snapshot takes (both at 1M keys).
  const gap = at1M.find((r) => r.name.endsWith('/max-record-gap-on'))!.value;
  const full = pause.find((r) => r.name === 'checkpointing/full-snapshot-write-1M')!.value;
  return [...at100k, ...at1M, ...pause, { name: 'checkpointing/job-max-record-gap-vs-full-snapshot-1M', value: gap / full, unit: 'ratio' }];
}
