// Nexmark Q8, monitor new users: the persons who opened an auction in the same tumbling window (10 s) as they
// registered, a windowed join of persons and auctions on person id = seller, one result per pair (as Beam's Q8).
import { defer, endWith, from, filter as rxFilter, mergeMap, scan } from 'rxjs';
import { assignTimestamps, createJob, filter, forEach, fromArray, join, keyBy, tumbling, type CheckpointOptions } from 'weir';
import { MAX_LAG, type Auction, type NexmarkEvent, type Person } from './generator';
import { drain, WINDOW, type NexmarkQuery } from './nexmarkQuery';
import { OpenWindows, Watermark, windowStart } from './windowsByHand';

export interface Q8Result {
  /** The window's start. */
  readonly start: number;
  readonly id: number;
  readonly name: string;
  readonly reserve: number;
}

const isPerson = (e: NexmarkEvent): e is Person => e.type === 'person';
const isAuction = (e: NexmarkEvent): e is Auction => e.type === 'auction';
const pair = (p: Person, a: Auction): Q8Result => ({ start: windowStart(p.dateTime, WINDOW), id: p.id, name: p.name, reserve: a.reserve });

function weir(events: readonly NexmarkEvent[], sink: (result: Q8Result) => void, checkpoints?: CheckpointOptions) {
  const job = createJob({ name: 'nexmark-q8', checkpoints });
  const all = job.source(fromArray(events), { uid: 'events' }).pipe(assignTimestamps((e: NexmarkEvent) => e.dateTime, { outOfOrderness: MAX_LAG, interval: 0 }));
  const persons = all.pipe(filter(isPerson), keyBy((p) => p.id));
  const auctions = all.pipe(filter(isAuction), keyBy((a) => a.seller));
  join(persons, auctions, { window: tumbling(WINDOW), apply: pair, uid: 'new-sellers' }).pipe(forEach(sink));
  return job.start().done;
}

/** A window's new persons by id and its auctions by seller. */
interface NewInWindow {
  readonly persons: Map<number, Person>;
  readonly auctions: Map<number, Auction[]>;
}

const newInWindow = (): NewInWindow => ({ persons: new Map(), auctions: new Map() });

function add(e: NexmarkEvent, open: OpenWindows<NewInWindow>, watermark: Watermark): void {
  if (e.type === 'bid') return;
  const window = open.get(windowStart(e.dateTime, WINDOW), watermark);
  if (window === undefined) return;
  if (e.type === 'person') {
    window.persons.set(e.id, e);
    return;
  }
  const auctions = window.auctions.get(e.seller);
  if (auctions === undefined) window.auctions.set(e.seller, [e]);
  else auctions.push(e);
}

function emitPairs(window: NewInWindow, emit: (result: Q8Result) => void): void {
  for (const [seller, auctions] of window.auctions) {
    const person = window.persons.get(seller);
    if (person !== undefined) for (const a of auctions) emit(pair(person, a));
  }
}

function rx(events: readonly NexmarkEvent[], sink: (result: Q8Result) => void): Promise<void> {
  const none: Q8Result[] = [];
  const END = null;
  const results = defer(() => {
    const open = new OpenWindows<NewInWindow>(WINDOW, newInWindow);
    const watermark = new Watermark(MAX_LAG);
    const closeUpTo = (time: number): Q8Result[] => {
      const closed: Q8Result[] = [];
      open.closeUpTo(time, (_start, window) => emitPairs(window, (r) => closed.push(r)));
      return closed;
    };
    return from(events).pipe(
      endWith(END),
      scan((_: Q8Result[], e: NexmarkEvent | null) => {
        if (e === END) return closeUpTo(Number.POSITIVE_INFINITY);
        add(e, open, watermark);
        return watermark.advance(e.dateTime) ? closeUpTo(watermark.current) : none;
      }, none),
      rxFilter((closed) => closed.length > 0),
      mergeMap((closed) => closed),
    );
  });
  return drain(results, sink);
}

function loop(events: readonly NexmarkEvent[], sink: (result: Q8Result) => void): void {
  const open = new OpenWindows<NewInWindow>(WINDOW, newInWindow);
  const watermark = new Watermark(MAX_LAG);
  const close = (_start: number, window: NewInWindow) => emitPairs(window, sink);
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    add(e, open, watermark);
    if (watermark.advance(e.dateTime)) open.closeUpTo(watermark.current, close);
  }
  open.closeUpTo(Number.POSITIVE_INFINITY, close);
}

export const q8: NexmarkQuery<Q8Result> = {
  name: 'q8',
  weir,
  rx,
  loop,
  canonical: (r) => `${r.start} ${r.id} ${r.name} ${r.reserve}`,
};
