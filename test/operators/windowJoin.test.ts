// A window join whose windows fire once at their end runs in its own operator (records held in memory until the
// window fires); given a trigger, the same join runs in the general window operator. Both must pair the same records,
// route the same late records, and read each other's checkpoints taken mid-window.
import { describe, expect, it } from 'vitest';
import {
  assignTimestamps,
  collect,
  createJob,
  eventTimeTrigger,
  filter,
  fromArray,
  join,
  keyBy,
  lateData,
  memoryCheckpointStorage,
  sliding,
  tumbling,
  type Flow,
  type Source,
  type WindowAssigner,
} from 'weir';
import { pausableSource } from '../checkpoint/fixtures';

interface Event {
  readonly side: 'left' | 'right';
  readonly key: number;
  readonly ts: number;
}

/** Left and right events of three keys, one per ms, in event-time order but for a few records 3 ms behind. */
const events: Event[] = Array.from({ length: 90 }, (_, i) => ({
  side: i % 2 === 0 ? ('left' as const) : ('right' as const),
  key: (i * 7) % 3,
  ts: i % 11 === 5 ? i - 3 : i,
}));

type Way = 'at-end' | 'general';

function pairs(job: ReturnType<typeof createJob>, source: Source<Event>, window: WindowAssigner, way: Way): Flow<string> {
  const all = job.source(source, { uid: 'events' }).pipe(assignTimestamps((e: Event) => e.ts, { outOfOrderness: 3, interval: 0 }));
  const lefts = all.pipe(filter((e: Event) => e.side === 'left'), keyBy((e: Event) => e.key));
  const rights = all.pipe(filter((e: Event) => e.side === 'right'), keyBy((e: Event) => e.key));
  return join(lefts, rights, {
    window,
    apply: (l: Event, r: Event) => `${l.key}:${l.ts}+${r.ts}`,
    uid: 'pairs',
    // The assigner's own trigger given explicitly: the same firing, through the general window operator.
    ...(way === 'general' ? { trigger: eventTimeTrigger() } : {}),
  });
}

async function run(window: WindowAssigner, way: Way, input: readonly Event[] = events): Promise<readonly string[]> {
  const job = createJob({ name: 'window-join' });
  const out = collect<string>();
  pairs(job, fromArray(input), window, way).pipe(out.sink({ uid: 'out' }));
  await job.start().done;
  return out.values;
}

const assigners: [string, () => WindowAssigner][] = [
  ['tumbling', () => tumbling(10)],
  ['sliding', () => sliding(10, 4)],
];

describe('a window join firing at window end', () => {
  for (const [name, assigner] of assigners) {
    it(`pairs what the general window operator pairs, in its order (${name})`, async () => {
      const general = await run(assigner(), 'general');
      expect(general.length).toBeGreaterThan(0);
      expect(await run(assigner(), 'at-end')).toEqual(general);
    });

    for (const [from, to] of [
      ['general', 'at-end'],
      ['at-end', 'general'],
    ] as const) {
      it(`restores a checkpoint the ${from} way took mid-window the ${to} way (${name})`, async () => {
        const expected = await run(assigner(), 'general');
        const storage = memoryCheckpointStorage();
        const out = collect<string>();
        const paused = pausableSource(events, [47]);
        const first = createJob({ name: 'window-join-restore', checkpoints: { storage }, chunkSize: 5 });
        pairs(first, paused.source, assigner(), from).pipe(out.sink({ uid: 'out' }));
        const running = first.start();
        await paused.reached(47);
        await running.checkpoint();
        await running.cancel();
        const second = createJob({ name: 'window-join-restore', checkpoints: { storage }, chunkSize: 5 });
        pairs(second, fromArray(events), assigner(), to).pipe(out.sink({ uid: 'out' }));
        await second.start({ restore: 'latest' }).done;
        expect([...out.values].sort()).toEqual([...expected].sort());
      });
    }
  }

  it('sends a record whose windows have all fired to the late-data output, as the general operator does', async () => {
    // The record at 2 comes after the watermark passed 9: window [0, 10) has fired.
    const input: Event[] = [
      { side: 'left', key: 1, ts: 1 },
      { side: 'right', key: 1, ts: 3 },
      { side: 'left', key: 1, ts: 20 },
      { side: 'right', key: 1, ts: 2 },
      { side: 'right', key: 1, ts: 21 },
    ];
    const lateOf = async (way: Way) => {
      const job = createJob({ name: 'window-join-late' });
      const out = collect<string>();
      const late = collect<unknown>();
      const joined = pairs(job, fromArray(input), tumbling(10), way);
      joined.pipe(out.sink({ uid: 'out' }));
      joined.pipe(lateData(), late.sink({ uid: 'late' }));
      await job.start().done;
      return { pairs: out.values, late: late.values };
    };
    const general = await lateOf('general');
    expect(general.pairs).toEqual(['1:1+3', '1:20+21']);
    expect(general.late).toHaveLength(1);
    expect(await lateOf('at-end')).toEqual(general);
  });
});
