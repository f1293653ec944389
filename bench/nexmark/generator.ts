// Nexmark's persons, auctions and bids (the data model of Apache Beam's and Flink's Nexmark), generated
// deterministically: the same events on every run and in every version of a query.

/** A new person registering to sell or bid. */
export interface Person {
  readonly type: 'person';
  readonly id: number;
  readonly name: string;
  readonly emailAddress: string;
  readonly city: string;
  readonly state: string;
  readonly dateTime: number;
}

/** A new auction: an item a person sells. */
export interface Auction {
  readonly type: 'auction';
  readonly id: number;
  readonly itemName: string;
  readonly initialBid: number;
  readonly reserve: number;
  readonly dateTime: number;
  readonly expires: number;
  readonly seller: number;
  readonly category: number;
}

/** A bid on an auction. */
export interface Bid {
  readonly type: 'bid';
  readonly auction: number;
  readonly bidder: number;
  /** In cents. */
  readonly price: number;
  readonly channel: string;
  readonly dateTime: number;
}

export type NexmarkEvent = Person | Auction | Bid;

/** How far (ms) an event's timestamp lags, at most, behind its place in the sequence: the queries' watermark bound. */
export const MAX_LAG = 50;

export interface GeneratorOptions {
  /** Events per second of event time (Nexmark's first event rate, 10 000 by default). */
  eventsPerSecond?: number;
  /** How far (ms) an event's timestamp may lag behind its place in the sequence (`MAX_LAG` by default; 0: in order). */
  outOfOrderness?: number;
  seed?: number;
}

/** Of every 50 events, 1 is a person, 3 are auctions and 46 are bids (Nexmark's default proportions). */
const PERSON_PROPORTION = 1;
const AUCTION_PROPORTION = 3;
const TOTAL_PROPORTION = 50;
const FIRST_PERSON_ID = 1000;
const FIRST_AUCTION_ID = 1000;
const FIRST_CATEGORY_ID = 10;
const CATEGORIES = 5;
/** Sellers and bidders are mostly among the last ACTIVE_PEOPLE persons, or among the next IN_FLIGHT ones yet to come. */
const ACTIVE_PEOPLE = 1000;
const IN_FLIGHT_PEOPLE = 100;
const IN_FLIGHT_AUCTIONS = 100;
/**
 * Half the bids go to a hot auction (the latest hundredth id), 3 in 4 auctions to a hot seller and 3 in 4 bids come
 * from a hot bidder (likewise among persons); the others to a recent or soon-to-come id.
 */
const HOT_AUCTION_RATIO = 2;
const HOT_SELLER_RATIO = 4;
const HOT_BIDDER_RATIO = 4;
const HOT_STRIDE = 100;
/** An auction runs for up to this long. */
const MAX_AUCTION_LENGTH = 20_000;

const STATES = ['AZ', 'CA', 'ID', 'OR', 'WA', 'WY'];
const CITIES = ['Phoenix', 'Los Angeles', 'San Francisco', 'Boise', 'Portland', 'Bend', 'Redmond', 'Seattle', 'Kent', 'Cheyenne'];
const FIRST_NAMES = ['Peter', 'Paul', 'Luke', 'John', 'Saul', 'Vicky', 'Kate', 'Julie', 'Sarah', 'Deiter', 'Walter'];
const LAST_NAMES = ['Shultz', 'Abrams', 'Spencer', 'White', 'Bartels', 'Walton', 'Smith', 'Jones', 'Noris'];
const CHANNELS = ['Google', 'Facebook', 'Baidu', 'Apple'];

/**
 * `count` Nexmark events in sequence order. Event `n` is due at `n / eventsPerSecond` seconds; its timestamp is that
 * instant (in whole ms) minus a pseudo-random lag of 0 to `outOfOrderness` ms, so timestamps are out of order by at
 * most `outOfOrderness`, and a watermark with that bound finds no late event. Persons and auctions get increasing
 * ids; a seller or bidder may be a person still to come (as in Nexmark), so joins must wait for either side.
 */
export function generateEvents(count: number, options: GeneratorOptions = {}): NexmarkEvent[] {
  const { eventsPerSecond = 10_000, outOfOrderness = MAX_LAG, seed = 0x2545f491 } = options;
  let state = seed | 0 || 1;
  /** xorshift32: an integer in [0, bound). */
  const next = (bound: number): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % bound;
  };
  const pick = <T>(values: readonly T[]): T => values[next(values.length)]!;
  /** A person id among the active ones or those soon to come, as seen at event `n`. */
  const someone = (lastPerson: number): number => {
    const active = Math.min(lastPerson, ACTIVE_PEOPLE);
    return FIRST_PERSON_ID + lastPerson - active + next(active + IN_FLIGHT_PEOPLE);
  };
  /** Prices spread over six orders of magnitude, from $1 (Nexmark's shape: 10^(6·u) dollars, in cents). */
  const price = (): number => Math.round(10 ** ((next(1_000_000) / 1_000_000) * 6) * 100);

  const events: NexmarkEvent[] = new Array(count);
  for (let n = 0; n < count; n++) {
    const epoch = Math.floor(n / TOTAL_PROPORTION);
    const offset = n % TOTAL_PROPORTION;
    const due = Math.floor((n * 1000) / eventsPerSecond);
    const dateTime = outOfOrderness > 0 ? Math.max(0, due - next(outOfOrderness + 1)) : due;
    // The ids of the last person and auction created at or before event n (0-based).
    const lastPerson = epoch * PERSON_PROPORTION + Math.min(offset, PERSON_PROPORTION - 1);
    const lastAuction = epoch * AUCTION_PROPORTION + Math.max(0, Math.min(offset - PERSON_PROPORTION, AUCTION_PROPORTION - 1));
    if (offset < PERSON_PROPORTION) {
      const id = FIRST_PERSON_ID + lastPerson;
      const name = `${pick(FIRST_NAMES)} ${pick(LAST_NAMES)}`;
      events[n] = { type: 'person', id, name, emailAddress: `p${id}@nexmark.example`, city: pick(CITIES), state: pick(STATES), dateTime };
    } else if (offset < PERSON_PROPORTION + AUCTION_PROPORTION) {
      const seller = next(HOT_SELLER_RATIO) > 0 ? FIRST_PERSON_ID + Math.floor(lastPerson / HOT_STRIDE) * HOT_STRIDE : someone(lastPerson);
      const initialBid = price();
      events[n] = {
        type: 'auction',
        id: FIRST_AUCTION_ID + lastAuction,
        itemName: `item-${lastAuction}`,
        initialBid,
        reserve: initialBid + price(),
        dateTime,
        expires: dateTime + 1 + next(MAX_AUCTION_LENGTH),
        seller,
        category: FIRST_CATEGORY_ID + next(CATEGORIES),
      };
    } else {
      const auction =
        next(HOT_AUCTION_RATIO) > 0
          ? FIRST_AUCTION_ID + Math.floor(lastAuction / HOT_STRIDE) * HOT_STRIDE
          : FIRST_AUCTION_ID + Math.max(0, lastAuction - IN_FLIGHT_AUCTIONS) + next(Math.min(lastAuction, IN_FLIGHT_AUCTIONS) + IN_FLIGHT_AUCTIONS);
      const bidder = next(HOT_BIDDER_RATIO) > 0 ? FIRST_PERSON_ID + Math.floor(lastPerson / HOT_STRIDE) * HOT_STRIDE + 1 : someone(lastPerson);
      events[n] = { type: 'bid', auction, bidder, price: price(), channel: pick(CHANNELS), dateTime };
    }
  }
  return events;
}
