// Nexmark Q5, hot items: the auctions with the most bids in each sliding window (10 s, every 2 s).
import { defer, endWith, from, filter as rxFilter, mergeMap, scan } from 'rxjs';
import { aggregate, assignTimestamps, createJob, filter, forEach, fromArray, keyBy, sliding, tumbling, window, type AggregateFunction, type CheckpointOptions } from 'weir';
import { MAX_LAG, type Bid, type NexmarkEvent } from './generator';
import { drain, WINDOW, type NexmarkQuery } from './nexmarkQuery';
import { OpenWindows, Watermark, windowStart } from './windowsByHand';

export interface Q5Result {
  /** The sliding window's start. */
  readonly start: number;
  readonly auction: number;
  readonly bids: number;
}

const SLIDE = 2_000;

const isBid = (e: NexmarkEvent): e is Bid => e.type === 'bid';

const countBids: AggregateFunction<Bid, number, number> = {
  createAccumulator: () => 0,
  add: (_bid, n) => n + 1,
  getResult: (n) => n,
  merge: (a, b) => a + b,
};

interface AuctionCount {
  readonly start: number;
  readonly auction: number;
  readonly bids: number;
}

/** The largest count of a window and the auctions that have it. */
interface Hottest {
  readonly bids: number;
  readonly auctions: readonly number[];
}

const hottest: AggregateFunction<AuctionCount, Hottest, Hottest> = {
  createAccumulator: () => ({ bids: 0, auctions: [] }),
  add: (c, acc) => (c.bids > acc.bids ? { bids: c.bids, auctions: [c.auction] } : c.bids === acc.bids ? { bids: acc.bids, auctions: [...acc.auctions, c.auction] } : acc),
  getResult: (acc) => acc,
  merge: (a, b) => (a.bids > b.bids ? a : b.bids > a.bids ? b : { bids: a.bids, auctions: [...a.auctions, ...b.auctions] }),
};

/**
 * Counts per auction and sliding window, then, keyed by the window's start, the counts of one window meet in the
 * tumbling window of one slide that holds their timestamp (the sliding window's last instant).
 */
function weir(events: readonly NexmarkEvent[], sink: (result: Q5Result) => void, checkpoints?: CheckpointOptions) {
  const job = createJob({ name: 'nexmark-q5', checkpoints });
  const bids = job.source(fromArray(events), { uid: 'events' }).pipe(
    assignTimestamps((e: NexmarkEvent) => e.dateTime, { outOfOrderness: MAX_LAG, interval: 0 }),
    filter(isBid),
  );
  bids.pipe(
    keyBy((b) => b.auction),
    window(sliding(WINDOW, SLIDE)),
    aggregate<Bid, number, number, AuctionCount>(countBids, {
      uid: 'bids-per-auction',
      process: { process: (auction, ctx, [bids], out) => out.emit({ start: ctx.window.start, auction: auction as number, bids: bids! }) },
    }),
    keyBy((c: AuctionCount) => c.start),
    window(tumbling(SLIDE)),
    aggregate<AuctionCount, Hottest, Hottest, Q5Result>(hottest, {
      uid: 'hottest',
      process: {
        process(start, _ctx, [hot], out) {
          for (const auction of hot!.auctions) out.emit({ start: start as number, auction, bids: hot!.bids });
        },
      },
    }),
    forEach(sink),
  );
  return job.start().done;
}

type Counts = Map<number, number>;

/** Emits the auctions with the most bids of the window at `start`. */
function emitHottest(start: number, counts: Counts, emit: (result: Q5Result) => void): void {
  let most = 0;
  for (const bids of counts.values()) if (bids > most) most = bids;
  for (const [auction, bids] of counts) if (bids === most) emit({ start, auction, bids });
}

/** Adds a bid to the count of its auction in each of its sliding windows. */
function countBid(bid: Bid, open: OpenWindows<Counts>, watermark: Watermark): void {
  for (let start = windowStart(bid.dateTime, SLIDE); start > bid.dateTime - WINDOW; start -= SLIDE) {
    const counts = open.get(start, watermark);
    if (counts !== undefined) counts.set(bid.auction, (counts.get(bid.auction) ?? 0) + 1);
  }
}

function rx(events: readonly NexmarkEvent[], sink: (result: Q5Result) => void): Promise<void> {
  const none: Q5Result[] = [];
  const END = null;
  const results = defer(() => {
    const open = new OpenWindows<Counts>(WINDOW, () => new Map());
    const watermark = new Watermark(MAX_LAG);
    const closeUpTo = (time: number): Q5Result[] => {
      const closed: Q5Result[] = [];
      open.closeUpTo(time, (start, counts) => emitHottest(start, counts, (r) => closed.push(r)));
      return closed;
    };
    return from(events).pipe(
      endWith(END),
      scan((_: Q5Result[], e: NexmarkEvent | null) => {
        if (e === END) return closeUpTo(Number.POSITIVE_INFINITY);
        if (e.type === 'bid') countBid(e, open, watermark);
        return watermark.advance(e.dateTime) ? closeUpTo(watermark.current) : none;
      }, none),
      rxFilter((closed) => closed.length > 0),
      mergeMap((closed) => closed),
    );
  });
  return drain(results, sink);
}

function loop(events: readonly NexmarkEvent[], sink: (result: Q5Result) => void): void {
  const open = new OpenWindows<Counts>(WINDOW, () => new Map());
  const watermark = new Watermark(MAX_LAG);
  const close = (start: number, counts: Counts) => emitHottest(start, counts, sink);
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.type === 'bid') countBid(e, open, watermark);
    if (watermark.advance(e.dateTime)) open.closeUpTo(watermark.current, close);
  }
  open.closeUpTo(Number.POSITIVE_INFINITY, close);
}

export const q5: NexmarkQuery<Q5Result> = {
  name: 'q5',
  weir,
  rx,
  loop,
  canonical: (r) => `${r.start} ${r.auction} ${r.bids}`,
};
