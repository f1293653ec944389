import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { aggregate, assignTimestamps, heapStateBackend, keyBy, process, reduce, session, tumbling, window, type Flow, type StateBackend } from 'weir';
import { lmdbStateBackend } from 'weir/node';
import { ev, runThreeWays, sum, type Ev } from '../windows/fixtures';

const root = mkdtempSync(join(tmpdir(), 'weir-windows-backends-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const backends: [string, () => StateBackend][] = [
  ['heap', () => heapStateBackend()],
  ['lmdb', () => lmdbStateBackend({ path: root })],
];

const timestamps = () => assignTimestamps<Ev>((e) => e.t, { outOfOrderness: 3, interval: 0 });

/** 40 events over 3 keys, moving forward in time with some disorder and gaps that close sessions. */
const events: Ev[] = Array.from({ length: 40 }, (_, i) => ev(`k${i % 3}`, i * 4 + ((i * 7) % 5) * 3 + (i > 20 ? 40 : 0), i));

const pipelines: [string, (flow: Flow<Ev>) => Flow<unknown>][] = [
  [
    'tumbling windows listing their elements',
    (flow) =>
      flow.pipe(
        timestamps(),
        keyBy((e: Ev) => e.k),
        window(tumbling(20), { allowedLateness: 5 }),
        process<Ev, [string, number, number[]]>({ process: (key, ctx, elements, out) => out.emit([String(key), ctx.window.start, elements.map((e) => e.v)]) }),
      ),
  ],
  ['tumbling windows reduced incrementally', (flow) => flow.pipe(timestamps(), keyBy((e: Ev) => e.k), window(tumbling(20)), reduce(sum))],
  [
    'session windows (merging) with an aggregate',
    (flow) =>
      flow.pipe(
        timestamps(),
        keyBy((e: Ev) => e.k),
        window(session(15)),
        aggregate({ createAccumulator: () => [] as number[], add: (e: Ev, acc: number[]) => [...acc, e.v], getResult: (acc) => acc, merge: (a, b) => [...a, ...b] }),
      ),
  ],
  [
    'session windows (merging) listing their elements',
    (flow) =>
      flow.pipe(
        timestamps(),
        keyBy((e: Ev) => e.k),
        window(session(15)),
        process<Ev, [string, number, number, number[]]>({
          process: (key, ctx, elements, out) => out.emit([String(key), ctx.window.start, ctx.window.end, elements.map((e) => e.v).sort((a, b) => a - b)]),
        }),
      ),
  ],
];

describe.each(backends)('windows on the %s state backend', (_name, stateBackend) => {
  it.each(pipelines)('%s: checkpointed mid-window, restored or restarted, gives the uninterrupted output', async (_pipeline, pipeline) => {
    for (const at of [7, 22, 35]) {
      const { uninterrupted, restored, restarted } = await runThreeWays(events, pipeline, { at, job: { stateBackend: stateBackend() } });
      expect(uninterrupted.out!.length).toBeGreaterThan(0);
      expect(restored, `restored from a checkpoint before record ${at}`).toEqual(uninterrupted);
      expect(restarted, `restarted after a failure, checkpoint before record ${at}`).toEqual(uninterrupted);
    }
  });
});

it('gives the same window output on both backends', async () => {
  for (const [, pipeline] of pipelines) {
    const [heap, lmdb] = await Promise.all(backends.map(([, backend]) => runThreeWays(events, pipeline, { at: 22, job: { stateBackend: backend() } })));
    expect(lmdb!.uninterrupted).toEqual(heap!.uninterrupted);
  }
});
