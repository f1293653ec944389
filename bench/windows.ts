import { defer, filter, from, mergeMap, scan } from 'rxjs';
import { assignTimestamps, createJob, forEach, fromArray, heapStateBackend, keyBy, reduce, session, sliding, tumbling, window, type WindowAssigner } from 'weir';
import { makeEvents, perSecond, sideBySide } from './measure';
import type { Result } from './report';

const EVENTS = 5_000_000;
const KEYS = 10_000;
const WINDOW = 1_000;
/** Event time advances 1 ms every EVENTS_PER_MS records: 100k events per second of event time, ~10 per key and window. */
const EVENTS_PER_MS = 100;
/** Records arrive up to JITTER ms behind the largest timestamp so far; the watermark allows OUT_OF_ORDERNESS. */
const JITTER = 50;
const OUT_OF_ORDERNESS = 100;
const SESSION_GAP = 200;
/** Session windows merge state per record and are slower: the first SESSION_EVENTS of the same events. */
const SESSION_EVENTS = 1_000_000;
/** Sliding windows of WINDOW ms every SLIDE ms: each record belongs to WINDOW / SLIDE = 10 windows. */
const SLIDE = 100;
/** Sliding windows cost the RxJS side ten map updates per record: the first SLIDING_EVENTS of the same events. */
const SLIDING_EVENTS = 2_000_000;

interface TimedEvent {
  readonly key: string;
  readonly n: number;
  readonly ts: number;
}

/** The keyed benchmark events with increasing timestamps, each up to JITTER ms late (deterministic). */
function makeTimedEvents(count: number, keyCount: number): TimedEvent[] {
  const keyed = makeEvents(count, keyCount);
  let seed = 0x1b873593;
  return keyed.map(({ key, n }, i) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    const base = Math.floor(i / EVENTS_PER_MS);
    return { key, n, ts: Math.max(0, base - ((seed >>> 0) % (JITTER + 1))) };
  });
}

const add = (a: TimedEvent, b: TimedEvent): TimedEvent => ({ key: a.key, n: a.n + b.n, ts: a.ts });

/** What both sides fold their output into, to check that they computed the same windows. */
interface Tally {
  windows: number;
  sum: number;
}

/** weir: assignTimestamps → keyBy → window(tumbling(1 s)) → reduce, heap backend, checkpoints off. */
function weirTumbling(events: TimedEvent[], interval: number, tally: Tally): Promise<number> {
  return weirWindows(events, interval, tumbling(WINDOW), tally);
}

/** weir: assignTimestamps → keyBy → window(assigner) → reduce, heap backend, checkpoints off. */
async function weirWindows(events: TimedEvent[], interval: number, assigner: WindowAssigner, tally: Tally): Promise<number> {
  tally.windows = tally.sum = 0;
  const start = performance.now();
  const job = createJob({ name: 'bench-windows', stateBackend: heapStateBackend() });
  job.source(fromArray(events), { uid: 'events' }).pipe(
    assignTimestamps((e: TimedEvent) => e.ts, { outOfOrderness: OUT_OF_ORDERNESS, interval }),
    keyBy((e) => e.key),
    window(assigner),
    reduce(add, { uid: 'per-second' }),
    forEach((e) => {
      tally.windows++;
      tally.sum += e.n;
    }),
  );
  await job.start().done;
  return perSecond(events.length, performance.now() - start);
}

/**
 * Plain RxJS, written by hand: one scan over a Map of open windows (window start → key → sum), tracking the same
 * bounded-out-of-orderness watermark; when the watermark passes a window's last instant the scan emits that
 * window's sums and forgets it. Late records (window already closed) are dropped, as weir drops them.
 */
function rxTumbling(events: TimedEvent[], tally: Tally): Promise<number> {
  tally.windows = tally.sum = 0;
  const start = performance.now();
  const END = null;
  return new Promise((resolve, reject) => {
    defer(() => {
      const open = new Map<number, Map<string, TimedEvent>>();
      let maxTimestamp = Number.NEGATIVE_INFINITY;
      let watermark = Number.NEGATIVE_INFINITY;
      const none: TimedEvent[] = [];
      const closeUpTo = (upTo: number): TimedEvent[] => {
        let closed: TimedEvent[] | undefined;
        for (const [windowStart, sums] of open) {
          if (windowStart + WINDOW - 1 > upTo) continue;
          closed ??= [];
          for (const sum of sums.values()) closed.push(sum);
          open.delete(windowStart);
        }
        return closed ?? none;
      };
      return from([...events, END]).pipe(
        scan((_: TimedEvent[], event: TimedEvent | null) => {
          if (event === END) return closeUpTo(Number.MAX_SAFE_INTEGER);
          const windowStart = event.ts - (event.ts % WINDOW);
          if (windowStart + WINDOW - 1 > watermark) {
            let sums = open.get(windowStart);
            if (sums === undefined) open.set(windowStart, (sums = new Map()));
            const current = sums.get(event.key);
            sums.set(event.key, current === undefined ? event : add(current, event));
          }
          if (event.ts > maxTimestamp) {
            maxTimestamp = event.ts;
            const next = maxTimestamp - OUT_OF_ORDERNESS - 1;
            if (next > watermark) {
              watermark = next;
              return closeUpTo(watermark);
            }
          }
          return none;
        }, none),
        filter((closed) => closed.length > 0),
        mergeMap((closed) => closed),
      );
    }).subscribe({
      next: (e) => {
        tally.windows++;
        tally.sum += e.n;
      },
      error: reject,
      complete: () => resolve(perSecond(events.length, performance.now() - start)),
    });
  });
}

/**
 * Plain RxJS for sliding windows, written by hand as the tumbling scan is: each record adds itself to the sums of
 * the WINDOW / SLIDE open windows it belongs to (window start → key → sum), and a window is emitted and forgotten
 * when the watermark passes its last instant.
 */
function rxSliding(events: TimedEvent[], tally: Tally): Promise<number> {
  tally.windows = tally.sum = 0;
  const start = performance.now();
  const END = null;
  return new Promise((resolve, reject) => {
    defer(() => {
      const open = new Map<number, Map<string, TimedEvent>>();
      let maxTimestamp = Number.NEGATIVE_INFINITY;
      let watermark = Number.NEGATIVE_INFINITY;
      const none: TimedEvent[] = [];
      const closeUpTo = (upTo: number): TimedEvent[] => {
        let closed: TimedEvent[] | undefined;
        for (const [windowStart, sums] of open) {
          if (windowStart + WINDOW - 1 > upTo) continue;
          closed ??= [];
          for (const sum of sums.values()) closed.push(sum);
          open.delete(windowStart);
        }
        return closed ?? none;
      };
      return from([...events, END]).pipe(
        scan((_: TimedEvent[], event: TimedEvent | null) => {
          if (event === END) return closeUpTo(Number.MAX_SAFE_INTEGER);
          for (let windowStart = event.ts - (event.ts % SLIDE); windowStart > event.ts - WINDOW; windowStart -= SLIDE) {
            if (windowStart + WINDOW - 1 <= watermark) break;
            let sums = open.get(windowStart);
            if (sums === undefined) open.set(windowStart, (sums = new Map()));
            const current = sums.get(event.key);
            sums.set(event.key, current === undefined ? event : add(current, event));
          }
          if (event.ts > maxTimestamp) {
            maxTimestamp = event.ts;
            const next = maxTimestamp - OUT_OF_ORDERNESS - 1;
            if (next > watermark) {
              watermark = next;
              return closeUpTo(watermark);
            }
          }
          return none;
        }, none),
        filter((closed) => closed.length > 0),
        mergeMap((closed) => closed),
      );
    }).subscribe({
      next: (e) => {
        tally.windows++;
        tally.sum += e.n;
      },
      error: reject,
      complete: () => resolve(perSecond(events.length, performance.now() - start)),
    });
  });
}

/** weir: session windows (gap 200 ms) summing per key over the same events. */
async function weirSessions(events: TimedEvent[], tally: Tally): Promise<number> {
  tally.windows = tally.sum = 0;
  const start = performance.now();
  const job = createJob({ name: 'bench-sessions', stateBackend: heapStateBackend() });
  job.source(fromArray(events), { uid: 'events' }).pipe(
    assignTimestamps((e: TimedEvent) => e.ts, { outOfOrderness: OUT_OF_ORDERNESS, interval: 0 }),
    keyBy((e) => e.key),
    window(session(SESSION_GAP)),
    reduce(add, { uid: 'sessions' }),
    forEach((e) => {
      tally.windows++;
      tally.sum += e.n;
    }),
  );
  await job.start().done;
  return perSecond(events.length, performance.now() - start);
}

function checkSame(what: string, a: Tally, b: Tally): void {
  if (a.windows !== b.windows || a.sum !== b.sum) {
    throw new Error(`windows bench: ${what} disagree: ${a.windows} windows summing to ${a.sum} vs ${b.windows} summing to ${b.sum}`);
  }
}

/**
 * `windows`: event-time tumbling 1 s windows summing per key, 5M events over 10k keys with up to 50 ms of
 * out-of-orderness, weir against a hand-written RxJS scan in the same run (weir with a watermark after every record
 * that advances it, as the scan does, and with the default periodic 200 ms watermarks); sliding 1 s windows every
 * 100 ms the same way over the first 2M of the events; session windows (gap 200 ms, the first 1M) recorded.
 */
export async function windows(): Promise<Result[]> {
  const events = makeTimedEvents(EVENTS, KEYS);
  const tallies = { weir: { windows: 0, sum: 0 }, periodic: { windows: 0, sum: 0 }, rx: { windows: 0, sum: 0 } };
  const best = await sideBySide(
    {
      weir: () => weirTumbling(events, 0, tallies.weir),
      periodic: () => weirTumbling(events, 200, tallies.periodic),
      rx: () => rxTumbling(events, tallies.rx),
    },
    { rounds: 3, best: 'max' },
  );
  checkSame('weir and the RxJS scan', tallies.weir, tallies.rx);
  checkSame('weir with periodic watermarks and the RxJS scan', tallies.periodic, tallies.rx);
  const slidingEvents = events.slice(0, SLIDING_EVENTS);
  const slidingTallies = { weir: { windows: 0, sum: 0 }, rx: { windows: 0, sum: 0 } };
  const slid = await sideBySide(
    {
      weir: () => weirWindows(slidingEvents, 0, sliding(WINDOW, SLIDE), slidingTallies.weir),
      rx: () => rxSliding(slidingEvents, slidingTallies.rx),
    },
    { rounds: 3, best: 'max' },
  );
  checkSame('weir and the RxJS scan on sliding windows', slidingTallies.weir, slidingTallies.rx);
  const sessionTally = { windows: 0, sum: 0 };
  const sessionEvents = events.slice(0, SESSION_EVENTS);
  const sessions = await sideBySide({ sessions: () => weirSessions(sessionEvents, sessionTally) }, { rounds: 2, best: 'max' });
  console.error(`[bench] windows: ${tallies.rx.windows} tumbling windows, ${slidingTallies.rx.windows} sliding windows, ${sessionTally.windows} sessions`);
  return [
    { name: 'windows/tumbling-weir', value: best.weir, unit: 'events/s' },
    { name: 'windows/tumbling-weir-periodic-watermarks', value: best.periodic, unit: 'events/s' },
    { name: 'windows/tumbling-rx-scan', value: best.rx, unit: 'events/s' },
    { name: 'windows/tumbling-weir-vs-rx', value: best.weir / best.rx, unit: 'ratio', bar: { op: '>=', value: 0.5 } },
    { name: 'windows/tumbling-weir-periodic-vs-rx', value: best.periodic / best.rx, unit: 'ratio' },
    { name: 'windows/sliding-weir', value: slid.weir, unit: 'events/s' },
    { name: 'windows/sliding-rx-scan', value: slid.rx, unit: 'events/s' },
    { name: 'windows/sliding-weir-vs-rx', value: slid.weir / slid.rx, unit: 'ratio' },
    { name: 'windows/session-events-per-s', value: sessions.sessions, unit: 'events/s' },
  ];
}
