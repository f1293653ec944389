// Nexmark Q1, currency conversion: every bid with its price in euros.
import { from, filter as rxFilter, map as rxMap } from 'rxjs';
import { createJob, filter, forEach, fromArray, map } from 'weir';
import type { Bid, NexmarkEvent } from './generator';
import { drain, type NexmarkQuery } from './nexmarkQuery';

export interface Q1Result {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly dateTime: number;
}

const DOLLARS_TO_EUROS = 0.908;
const isBid = (e: NexmarkEvent): e is Bid => e.type === 'bid';
const toEuros = (b: Bid): Q1Result => ({ auction: b.auction, bidder: b.bidder, price: b.price * DOLLARS_TO_EUROS, dateTime: b.dateTime });

export const q1: NexmarkQuery<Q1Result> = {
  name: 'q1',
  weir(events, sink, checkpoints) {
    const job = createJob({ name: 'nexmark-q1', checkpoints });
    job.source(fromArray(events), { uid: 'events' }).pipe(filter(isBid), map(toEuros), forEach(sink));
    return job.start().done;
  },
  rx: (events, sink) => drain(from(events).pipe(rxFilter(isBid), rxMap(toEuros)), sink),
  loop(events, sink) {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.type === 'bid') sink(toEuros(e));
    }
  },
  canonical: (r) => `${r.auction} ${r.bidder} ${r.price} ${r.dateTime}`,
};
