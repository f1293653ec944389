// Nexmark Q7, highest bid: the bids with the highest price of each tumbling window (10 s).
import { defer, endWith, from, filter as rxFilter, mergeMap, scan } from 'rxjs';
import { aggregate, assignTimestamps, createJob, filter, forEach, fromArray, keyBy, tumbling, window, type AggregateFunction, type CheckpointOptions } from 'weir';
import { MAX_LAG, type Bid, type NexmarkEvent } from './generator';
import { drain, WINDOW, type NexmarkQuery } from './nexmarkQuery';
import { OpenWindows, Watermark, windowStart } from './windowsByHand';

export interface Q7Result {
  /** The window's start. */
  readonly start: number;
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly dateTime: number;
}

const isBid = (e: NexmarkEvent): e is Bid => e.type === 'bid';

/** The highest price so far and the bids that offer it (ties are all kept). */
interface Highest {
  readonly price: number;
  readonly bids: readonly Bid[];
}

const NONE: Highest = { price: Number.NEGATIVE_INFINITY, bids: [] };

const withBid = (bid: Bid, acc: Highest): Highest =>
  bid.price > acc.price ? { price: bid.price, bids: [bid] } : bid.price === acc.price ? { price: acc.price, bids: [...acc.bids, bid] } : acc;

const highest: AggregateFunction<Bid, Highest, Highest> = {
  createAccumulator: () => NONE,
  add: withBid,
  getResult: (acc) => acc,
  merge: (a, b) => b.bids.reduce((acc, bid) => withBid(bid, acc), a),
};

const result = (start: number, b: Bid): Q7Result => ({ start, auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime });

/** One key for all bids: the window is over the whole stream (Flink's windowAll). */
function weir(events: readonly NexmarkEvent[], sink: (result: Q7Result) => void, checkpoints?: CheckpointOptions) {
  const job = createJob({ name: 'nexmark-q7', checkpoints });
  job.source(fromArray(events), { uid: 'events' }).pipe(
    assignTimestamps((e: NexmarkEvent) => e.dateTime, { outOfOrderness: MAX_LAG, interval: 0 }),
    filter(isBid),
    keyBy(() => 0),
    window(tumbling(WINDOW)),
    aggregate<Bid, Highest, Highest, Q7Result>(highest, {
      uid: 'highest-bid',
      process: {
        process(_key, ctx, [top], out) {
          for (const bid of top!.bids) out.emit(result(ctx.window.start, bid));
        },
      },
    }),
    forEach(sink),
  );
  return job.start().done;
}

interface Top {
  highest: Highest;
}

function rx(events: readonly NexmarkEvent[], sink: (result: Q7Result) => void): Promise<void> {
  const none: Q7Result[] = [];
  const END = null;
  const results = defer(() => {
    const open = new OpenWindows<Top>(WINDOW, () => ({ highest: NONE }));
    const watermark = new Watermark(MAX_LAG);
    const closeUpTo = (time: number): Q7Result[] => {
      const closed: Q7Result[] = [];
      open.closeUpTo(time, (start, top) => {
        for (const bid of top.highest.bids) closed.push(result(start, bid));
      });
      return closed;
    };
    return from(events).pipe(
      endWith(END),
      scan((_: Q7Result[], e: NexmarkEvent | null) => {
        if (e === END) return closeUpTo(Number.POSITIVE_INFINITY);
        if (e.type === 'bid') {
          const top = open.get(windowStart(e.dateTime, WINDOW), watermark);
          if (top !== undefined) top.highest = withBid(e, top.highest);
        }
        return watermark.advance(e.dateTime) ? closeUpTo(watermark.current) : none;
      }, none),
      rxFilter((closed) => closed.length > 0),
      mergeMap((closed) => closed),
    );
  });
  return drain(results, sink);
}

function loop(events: readonly NexmarkEvent[], sink: (result: Q7Result) => void): void {
  const open = new OpenWindows<Top>(WINDOW, () => ({ highest: NONE }));
  const watermark = new Watermark(MAX_LAG);
  const close = (start: number, top: Top) => {
    for (const bid of top.highest.bids) sink(result(start, bid));
  };
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.type === 'bid') {
      const top = open.get(windowStart(e.dateTime, WINDOW), watermark);
      if (top !== undefined) top.highest = withBid(e, top.highest);
    }
    if (watermark.advance(e.dateTime)) open.closeUpTo(watermark.current, close);
  }
  open.closeUpTo(Number.POSITIVE_INFINITY, close);
}

export const q7: NexmarkQuery<Q7Result> = {
  name: 'q7',
  weir,
  rx,
  loop,
  canonical: (r) => `${r.start} ${r.auction} ${r.bidder} ${r.price} ${r.dateTime}`,
};
