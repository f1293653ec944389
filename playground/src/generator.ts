import type { Source } from 'weir/browser';

/** One generated event. Every field is a pure function of `seq`, so a source restored to an offset replays exactly. */
export interface PlaygroundEvent {
  seq: number;
  user: string;
  /** A transaction or purchase amount in whole units; fraud probes are 0 followed by a large one. */
  amount: number;
  /** A short line of text (for word count). */
  text: string;
  /** Event time: 250 ms of event time per record, from 2024-01-01. */
  ts: number;
}

const USERS = ['ada', 'bob', 'cy', 'dee', 'eve', 'fay', 'gus', 'hal'];
const WORDS = 'the quick brown fox jumps over a lazy dog while rivers flow past every weir and barrier in spring'.split(' ');
const START = Date.UTC(2024, 0, 1);

/** A small integer hash (mulberry32 step): deterministic pseudo-randomness per record. */
function hash(n: number): number {
  let t = (n + 0x6d2b79f5) | 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

export function eventAt(seq: number): PlaygroundEvent {
  // Users are active in bursts of 40 records, three at a time, so sessions open and close.
  const burst = Math.floor(seq / 40);
  const user = USERS[(burst * 3 + Math.floor(hash(seq) * 3)) % USERS.length]!;
  const r = hash(seq * 7 + 1);
  // Now and then an account is probed with a 0 amount and then drained with a large one.
  const probe = hash(burst * 13 + USERS.indexOf(user)) < 0.3 && seq % 40 === 17;
  const amount = probe ? 0 : (seq % 40 === 18 && hash(burst * 13 + USERS.indexOf(user)) < 0.3) ? 900 + Math.floor(r * 100) : 1 + Math.floor(r * 120);
  const words = 2 + Math.floor(hash(seq * 3 + 2) * 4);
  const text = Array.from({ length: words }, (_, i) => WORDS[Math.floor(hash(seq * 11 + i) * WORDS.length)]!).join(' ');
  return { seq, user, amount, text, ts: START + seq * 250 };
}

/** What the playground's controls change while a job runs. */
export interface GeneratorControl {
  /** Records per second; 0 pauses the input. */
  rate: number;
  /** The offset of the reader of the current attempt: records handed to the job so far. */
  offset: number;
  /** True once the reader has seen a rate of 0: from then on no record comes until the rate goes up again. */
  paused: boolean;
  /** The offset each attempt's reader opened at, in order: one entry per attempt that has restored and started reading. */
  opened: number[];
}

/**
 * A replayable source generating `eventAt(0), eventAt(1), …` at `control.rate` records per second of wall-clock
 * time (setTimeout in the reader is fine in the playground; jobs keep time on their scheduler). Its offset is the
 * next sequence number, so a restore resumes exactly after the last checkpointed record.
 */
export function generatedSource(control: GeneratorControl): Source<PlaygroundEvent> {
  return {
    name: 'generated events',
    replayable: true,
    open({ restoredOffset }) {
      let next = typeof restoredOffset === 'number' ? restoredOffset : 0;
      let credit = 0;
      let last = performance.now();
      control.offset = next;
      control.opened.push(next);
      return {
        read(max) {
          const now = performance.now();
          // Credit accrues with time at the current rate, capped so that a pause is not followed by a burst; a rate
          // of 0 pauses at once, credit left over included.
          credit = control.rate > 0 ? Math.min(credit + ((now - last) / 1000) * control.rate, Math.max(1, control.rate / 4)) : 0;
          last = now;
          control.paused = control.rate <= 0;
          const n = Math.min(max, Math.floor(credit));
          if (n === 0) return new Promise((resolve) => setTimeout(() => resolve([]), 25));
          credit -= n;
          const chunk = Array.from({ length: n }, (_, i) => eventAt(next + i));
          next += n;
          control.offset = next;
          return chunk;
        },
        offset: () => next,
      };
    },
  };
}
