// Nexmark Q2, selection: the bids on a few auctions (every 123rd id).
import { from, filter as rxFilter, map as rxMap } from 'rxjs';
import { createJob, filter, forEach, fromArray, map } from 'weir';
import type { Bid, NexmarkEvent } from './generator';
import { drain, type NexmarkQuery } from './nexmarkQuery';

export interface Q2Result {
  readonly auction: number;
  readonly price: number;
}

const AUCTION_SKIP = 123;
const isSelectedBid = (e: NexmarkEvent): e is Bid => e.type === 'bid' && e.auction % AUCTION_SKIP === 0;
const project = (b: Bid): Q2Result => ({ auction: b.auction, price: b.price });

export const q2: NexmarkQuery<Q2Result> = {
  name: 'q2',
  weir(events, sink, checkpoints) {
    const job = createJob({ name: 'nexmark-q2', checkpoints });
    job.source(fromArray(events), { uid: 'events' }).pipe(filter(isSelectedBid), map(project), forEach(sink));
    return job.start().done;
  },
  rx: (events, sink) => drain(from(events).pipe(rxFilter(isSelectedBid), rxMap(project)), sink),
  loop(events, sink) {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.type === 'bid' && e.auction % AUCTION_SKIP === 0) sink(project(e));
    }
  },
  canonical: (r) => `${r.auction} ${r.price}`,
};
