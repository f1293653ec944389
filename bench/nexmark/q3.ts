// Nexmark Q3, local item suggestion: who sells in category 10 in Oregon, Idaho or California. An unbounded join of
// persons and auctions on seller = person id, in keyed state: a person is kept for good, an auction waits for its
// seller (who may come later) and is joined when they do.
import { defer, from, filter as rxFilter, mergeMap, scan } from 'rxjs';
import { connect, coProcess, createJob, filter, forEach, fromArray, keyBy, listState, valueState, type CheckpointOptions } from 'weir';
import type { Auction, NexmarkEvent, Person } from './generator';
import { drain, type NexmarkQuery } from './nexmarkQuery';

export interface Q3Result {
  readonly name: string;
  readonly city: string;
  readonly state: string;
  readonly auction: number;
}

const CATEGORY = 10;
const isLocalSeller = (e: NexmarkEvent): e is Person => e.type === 'person' && (e.state === 'OR' || e.state === 'ID' || e.state === 'CA');
const isInCategory = (e: NexmarkEvent): e is Auction => e.type === 'auction' && e.category === CATEGORY;
const joined = (p: Person, a: Auction): Q3Result => ({ name: p.name, city: p.city, state: p.state, auction: a.id });

const seller = valueState<Person>('seller');
const waiting = listState<Auction>('auctions-waiting');

function weir(events: readonly NexmarkEvent[], sink: (result: Q3Result) => void, checkpoints?: CheckpointOptions) {
  const job = createJob({ name: 'nexmark-q3', checkpoints });
  const all = job.source(fromArray(events), { uid: 'events' });
  const sellers = all.pipe(filter(isLocalSeller), keyBy((p) => p.id));
  const auctions = all.pipe(filter(isInCategory), keyBy((a) => a.seller));
  connect(sellers, auctions).pipe(
    coProcess<Person, Auction, Q3Result>(
      {
        onElement1(p, ctx, out) {
          ctx.state(seller).update(p);
          const pending = ctx.state(waiting);
          for (const a of pending.get()) out.emit(joined(p, a));
          pending.clear();
        },
        onElement2(a, ctx, out) {
          const p = ctx.state(seller).value();
          if (p !== undefined) out.emit(joined(p, a));
          else ctx.state(waiting).add(a);
        },
      },
      { uid: 'join' },
    ),
    forEach(sink),
  );
  return job.start().done;
}

function rx(events: readonly NexmarkEvent[], sink: (result: Q3Result) => void): Promise<void> {
  const none: Q3Result[] = [];
  const results = defer(() => {
    const sellers = new Map<number, Person>();
    const pending = new Map<number, Auction[]>();
    return from(events).pipe(
      scan((_: Q3Result[], e: NexmarkEvent) => {
        if (isLocalSeller(e)) {
          sellers.set(e.id, e);
          const auctions = pending.get(e.id);
          if (auctions === undefined) return none;
          pending.delete(e.id);
          return auctions.map((a) => joined(e, a));
        }
        if (isInCategory(e)) {
          const p = sellers.get(e.seller);
          if (p !== undefined) return [joined(p, e)];
          const auctions = pending.get(e.seller);
          if (auctions === undefined) pending.set(e.seller, [e]);
          else auctions.push(e);
        }
        return none;
      }, none),
      rxFilter((out) => out.length > 0),
      mergeMap((out) => out),
    );
  });
  return drain(results, sink);
}

function loop(events: readonly NexmarkEvent[], sink: (result: Q3Result) => void): void {
  const sellers = new Map<number, Person>();
  const pending = new Map<number, Auction[]>();
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (isLocalSeller(e)) {
      sellers.set(e.id, e);
      const auctions = pending.get(e.id);
      if (auctions === undefined) continue;
      pending.delete(e.id);
      for (const a of auctions) sink(joined(e, a));
    } else if (isInCategory(e)) {
      const p = sellers.get(e.seller);
      if (p !== undefined) sink(joined(p, e));
      else {
        const auctions = pending.get(e.seller);
        if (auctions === undefined) pending.set(e.seller, [e]);
        else auctions.push(e);
      }
    }
  }
}

export const q3: NexmarkQuery<Q3Result> = {
  name: 'q3',
  weir,
  rx,
  loop,
  canonical: (r) => `${r.auction} ${r.name} ${r.city} ${r.state}`,
};
