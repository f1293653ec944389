// Bad job definitions of multi-input dataflows and of the checkpoint control plane fail at pipe or createJob time.
import { describe, expect, it } from 'vitest';
import {
  JobDefinitionError,
  assignTimestamps,
  broadcast,
  connect,
  coProcess,
  createJob,
  fromArray,
  intervalJoin,
  join,
  keyBy,
  mapState,
  processBroadcast,
  tumbling,
  union,
  type CheckpointOptions,
} from 'weir';

type E = { k: string; t: number };
const flowOf = (name = 'j') => createJob({ name }).source(fromArray<E>([{ k: 'a', t: 1 }]), { uid: 'in' });
const byKey = keyBy((e: E) => e.k);
const both = { onElement1: () => undefined, onElement2: () => undefined };

describe('multi-input operators reject bad graphs at pipe time', () => {
  it('flows of different jobs cannot meet', () => {
    const a = flowOf('one');
    const b = flowOf('two');
    expect(() => union(a, b)).toThrow(JobDefinitionError);
    expect(() => union(a, b)).toThrow(/belong to different jobs/);
    expect(() => connect(a, b)).toThrow(/different jobs/);
    expect(() => connect(a.pipe(byKey), b.pipe(broadcast(mapState<string, number>('m'))))).toThrow(/different jobs/);
    expect(() => join(a.pipe(byKey), b.pipe(byKey), { window: tumbling(10), apply: () => 1 })).toThrow(/different jobs/);
  });

  it('joins need keyed flows on both sides', () => {
    const job = createJob({ name: 'j' });
    const a = job.source(fromArray<E>([]), { uid: 'a' });
    const b = job.source(fromArray<E>([]), { uid: 'b' });
    expect(() => join(a, b.pipe(byKey), { window: tumbling(10), apply: () => 1 })).toThrow(/join: both flows must be keyed/);
    expect(() => join(a.pipe(byKey), b, { window: tumbling(10), apply: () => 1 })).toThrow(JobDefinitionError);
    expect(() => intervalJoin(a, b, { lowerBound: 0, upperBound: 1, apply: () => 1 })).toThrow(/intervalJoin: both flows must be keyed/);
  });

  it('intervalJoin needs event timestamps and sane bounds', () => {
    const job = createJob({ name: 'j' });
    const a = job.source(fromArray<E>([]), { uid: 'a' });
    const b = job.source(fromArray<E>([]), { uid: 'b' });
    expect(() => intervalJoin(a.pipe(byKey), b.pipe(byKey), { lowerBound: 0, upperBound: 1, apply: () => 1 })).toThrow(/need event timestamps/);
    const ts = (f: typeof a) => f.pipe(assignTimestamps((e: E) => e.t), byKey);
    expect(() => intervalJoin(ts(a), ts(b), { lowerBound: 5, upperBound: 1, apply: () => 1 })).toThrow(/lowerBound ≤ upperBound/);
  });

  it('connect needs both flows keyed or neither; a broadcast flow connects to a keyed one', () => {
    const job = createJob({ name: 'j' });
    const a = job.source(fromArray<E>([]), { uid: 'a' });
    const b = job.source(fromArray<E>([]), { uid: 'b' });
    expect(() => connect(a.pipe(byKey), b)).toThrow(/key both flows .* or neither/);
    expect(() => connect(a, b.pipe(byKey))).toThrow(JobDefinitionError);
    expect(() => connect(a, b.pipe(broadcast(mapState<string, number>('m'))))).toThrow(/broadcast flow connects to a keyed flow/);
    expect(() => connect(a.pipe(byKey), b.pipe(byKey)).pipe(processBroadcast({ onElement: () => undefined, onBroadcastElement: () => undefined }))).toThrow(
      /processBroadcast: connect a keyed flow with a broadcast flow/,
    );
    expect(() => connect(a, b).pipe(coProcess(both))).not.toThrow();
  });
});

describe('createJob rejects invalid control-plane options', () => {
  const bad: [string, CheckpointOptions, RegExp][] = [
    ['interval ≤ 0', { interval: 0 }, /interval must be > 0/],
    ['negative timeout', { timeout: -1 }, /timeout must be > 0/],
    ['negative minPause', { minPause: -5 }, /minPause must be ≥ 0/],
    ['maxConcurrent 0', { maxConcurrent: 0 }, /maxConcurrent must be an integer ≥ 1/],
    ['fractional maxConcurrent', { maxConcurrent: 1.5 }, /maxConcurrent must be an integer ≥ 1/],
    ['negative tolerableFailures', { tolerableFailures: -1 }, /tolerableFailures must be an integer ≥ 0/],
    ['negative alignedTimeout', { alignedTimeout: -1 }, /alignedTimeout must be ≥ 0/],
    ['unknown mode', { mode: 'twice' as never }, /mode must be 'exactly-once' or 'at-least-once'/],
    ['retain 0', { retain: 0 }, /retain must be an integer ≥ 1/],
    ['alignedTimeout ≥ timeout', { timeout: 1_000, alignedTimeout: 1_000 }, /alignedTimeout \(1000 ms\) must be shorter than timeout \(1000 ms\)/],
    ['alignedTimeout ≥ timeout, periodic', { interval: 100, timeout: 1_000, alignedTimeout: 5_000 }, /must be shorter than timeout/],
    ['alignedTimeout ≥ the default timeout', { alignedTimeout: 600_000 }, /must be shorter than timeout \(600000 ms\)/],
  ];
  for (const [what, checkpoints, message] of bad) {
    it(what, () => {
      expect(() => createJob({ name: 'j', checkpoints })).toThrow(JobDefinitionError);
      expect(() => createJob({ name: 'j', checkpoints })).toThrow(message);
    });
  }

  it('accepts a valid control plane', () => {
    expect(() =>
      createJob({ name: 'j', checkpoints: { interval: 100, timeout: 1_000, alignedTimeout: 50, minPause: 10, maxConcurrent: 2, tolerableFailures: 3, retain: 2, retainOnCancel: false } }),
    ).not.toThrow();
  });
});
