// A windowed join fed by a fan-out of one source (Nexmark Q8's shape): both join inputs get every watermark of the
// source, so the join's watermark (the minimum of its inputs', Flink's valve) follows the source's even when one
// branch filters out every record, and a checkpoint's barrier, reaching the join on both inputs, cuts it consistently.
import { describe, expect, it } from 'vitest';
import {
  assignTimestamps,
  collect,
  connect,
  coProcess,
  createJob,
  filter,
  forEach,
  fromArray,
  join,
  keyBy,
  memoryCheckpointStorage,
  tumbling,
  type Flow,
  type Source,
} from 'weir';
import { pausableSource } from '../checkpoint/fixtures';

/** A person registering (id), an auction opened by a seller, or a bid neither side of the join reads. */
interface Event {
  readonly kind: 'person' | 'auction' | 'bid';
  readonly id: number;
  readonly ts: number;
}

const WINDOW = 10;
/** Every third event a person, the next an auction of that person, then a bid; one event per ms. */
const events: Event[] = Array.from({ length: 60 }, (_, ts) => ({ kind: (['person', 'auction', 'bid'] as const)[ts % 3]!, id: ts - (ts % 3), ts }));

/** The pairs a windowed join of persons and auctions on id gives, worked out with a plain loop. */
function expectedPairs(input: readonly Event[]): string[] {
  const pairs: string[] = [];
  for (const auction of input.filter((e) => e.kind === 'auction')) {
    for (const person of input.filter((e) => e.kind === 'person' && e.id === auction.id)) {
      const start = auction.ts - (auction.ts % WINDOW);
      if (person.ts - (person.ts % WINDOW) === start) pairs.push(`${start}:${person.id}`);
    }
  }
  return pairs;
}

/** Persons ⋈ auctions in tumbling windows, both read from one source through filters; `seen` logs every record. */
function newSellers(job: ReturnType<typeof createJob>, source: Source<Event>, out: (flow: Flow<string>) => void, seen?: string[]) {
  const all = job.source(source, { uid: 'events' }).pipe(assignTimestamps((e: Event) => e.ts, { interval: 0 }));
  if (seen) all.pipe(forEach((e: Event) => seen.push(`record ${e.ts}`), { uid: 'log' }));
  const persons = all.pipe(filter((e: Event) => e.kind === 'person'), keyBy((e: Event) => e.id));
  const auctions = all.pipe(filter((e: Event) => e.kind === 'auction'), keyBy((e: Event) => e.id));
  out(join(persons, auctions, { window: tumbling(WINDOW), apply: (p: Event) => `${p.ts - (p.ts % WINDOW)}:${p.id}`, uid: 'new-sellers' }));
}

describe('a windowed join after a fan-out', () => {
  it('fires each window as soon as the source watermark passes it, between the records on either side of it', async () => {
    const job = createJob({ name: 'fan-out-join-order' });
    const seen: string[] = [];
    newSellers(job, fromArray(events.slice(0, 25)), (pairs) => pairs.pipe(forEach((pair) => seen.push(`pair ${pair}`), { uid: 'pairs' })), seen);
    await job.start().done;
    // Window [0, 10) fires on the watermark 9 that record 10 sends, after every branch has seen record 10.
    const fired = seen.indexOf('pair 0:0');
    expect(seen.slice(fired - 1, fired + 4)).toEqual(['record 10', 'pair 0:0', 'pair 0:3', 'pair 0:6', 'record 11']);
    expect(seen.filter((line) => line.startsWith('pair'))).toEqual(expectedPairs(events.slice(0, 25)).map((pair) => `pair ${pair}`));
  });

  it('is not held back by a branch that filters out every record: watermarks pass the filter', async () => {
    const job = createJob({ name: 'fan-out-empty-branch' });
    const seen: string[] = [];
    const all = job.source(fromArray(events.slice(0, 25)), { uid: 'events' }).pipe(assignTimestamps((e: Event) => e.ts, { interval: 0 }));
    all.pipe(forEach((e) => seen.push(`record ${e.ts}`), { uid: 'log' }));
    const persons = all.pipe(filter((e: Event) => e.kind === 'person'), keyBy(() => 'all'));
    const none = all.pipe(filter(() => false), keyBy(() => 'all'));
    connect(persons, none).pipe(
      coProcess<Event, Event, string>(
        {
          onElement1: (e, ctx) => ctx.timers.registerEventTimeTimer(e.ts + 5),
          onElement2: () => undefined,
          onTimer: (time, _ctx, out) => out.emit(`timer ${time}`),
        },
        { uid: 'timers' },
      ),
      forEach((line) => seen.push(line), { uid: 'out' }),
    );
    await job.start().done;
    // The person at 0 set a timer at 5: it fires on the watermark 5 that record 6 sends, both inputs having sent it.
    expect(seen.slice(seen.indexOf('record 6'), seen.indexOf('record 6') + 3)).toEqual(['record 6', 'timer 5', 'record 7']);
  });

  it('restores a checkpoint taken mid-window and emits every pair exactly once', async () => {
    const storage = memoryCheckpointStorage();
    const out = collect<string>();
    // The first run stops before record 30 (a chunk boundary) with a checkpoint: window [20, 30) is open, its persons
    // and auctions in state, and the pairs of the windows before it are committed.
    const paused = pausableSource(events, [30]);
    const firstJob = createJob({ name: 'fan-out-join-restore', checkpoints: { storage }, chunkSize: 10 });
    newSellers(firstJob, paused.source, (pairs) => pairs.pipe(out.sink({ uid: 'out' })));
    const first = firstJob.start();
    await paused.reached(30);
    await first.checkpoint();
    await first.cancel();
    expect(out.values).toEqual(expectedPairs(events.slice(0, 20)));

    const secondJob = createJob({ name: 'fan-out-join-restore', checkpoints: { storage }, chunkSize: 10 });
    newSellers(secondJob, fromArray(events), (pairs) => pairs.pipe(out.sink({ uid: 'out' })));
    await secondJob.start({ restore: 'latest' }).done;
    expect(out.values).toEqual(expectedPairs(events));
  });
});
