/**
 * Ready examples, in plain JavaScript against the real weir API. Each runs as the body of
 * `new Function('weir', 'ctx', code)`: `weir` is the 'weir/browser' module; `ctx` is the playground's harness:
 * - `ctx.input()`: the generated events (`{ seq, user, amount, text, ts }`) as a flow of `ctx.job`, which has
 *   IndexedDB checkpoints and a restart strategy;
 * - `ctx.output()`: a sink showing records in the Output panel (at-least-once, like `forEach`);
 * - `ctx.verify({ state, perRecord })`: the exactly-once check: the sum of the queryable state's values must equal
 *   the sum of `perRecord(event)` over every event the source has handed to the job.
 */
export interface Example {
  id: string;
  title: string;
  doc: string;
  code: string;
}

const wordCount = `// Word count: lines of text, split into words, and a running count per word.
const { flatMap, keyBy, process, valueState } = weir;

// Marked queryable: the Live state panel reads it while the job runs.
const count = valueState('count', { default: 0, queryable: 'word-count' });

ctx.input().pipe(
  flatMap((event) => event.text.split(' ')),
  keyBy((word) => word),
  process({
    onElement(word, c, out) {
      const n = c.state(count).value() + 1;
      c.state(count).update(n);
      out.emit({ word, n });
    },
  }, { uid: 'word-count' }),
  ctx.output(),
);

// Exactly-once: the counts add up to the number of words read, after any crash.
ctx.verify({ state: 'word-count', perRecord: (event) => event.text.split(' ').length });
`;

const windowTotals = `// Per-user totals in tumbling windows of 10 s of event time (40 events).
const { assignTimestamps, keyBy, window, tumbling, aggregate, process, valueState } = weir;

const events = ctx.input().pipe(assignTimestamps((event) => event.ts, { outOfOrderness: 0 }));

const sum = { createAccumulator: () => 0, add: (e, acc) => acc + e.amount, getResult: (acc) => acc, merge: (a, b) => a + b };
events.pipe(
  keyBy((event) => event.user),
  window(tumbling(10_000)),
  aggregate(sum, {
    uid: 'window-totals',
    process: {
      process(user, w, [total], out) {
        out.emit({ user, window: new Date(w.window.start).toISOString().slice(11, 19), total });
      },
    },
  }),
  ctx.output(),
);

// A running total per user beside the windows, for the exactly-once check.
const total = valueState('total', { default: 0, queryable: 'total-per-user' });
events.pipe(
  keyBy((event) => event.user),
  process({ onElement(e, c) { c.state(total).update(c.state(total).value() + e.amount); } }, { uid: 'running-total' }),
);
ctx.verify({ state: 'total-per-user', perRecord: (event) => event.amount });
`;

const sessions = `// Sessionization: a user's events with less than 5 s of event time between them form a session.
const { assignTimestamps, keyBy, window, session, process, valueState } = weir;

const events = ctx.input().pipe(assignTimestamps((event) => event.ts, { outOfOrderness: 0 }));

events.pipe(
  keyBy((event) => event.user),
  window(session(5_000)),
  process({
    process(user, w, elements, out) {
      const spent = elements.reduce((sum, e) => sum + e.amount, 0);
      out.emit({ user, events: elements.length, seconds: (w.window.end - w.window.start) / 1000, spent });
    },
  }, { uid: 'sessions' }),
  ctx.output(),
);

// Events per user, queryable, for the exactly-once check.
const seen = valueState('seen', { default: 0, queryable: 'events-per-user' });
events.pipe(
  keyBy((event) => event.user),
  process({ onElement(e, c) { c.state(seen).update(c.state(seen).value() + 1); } }, { uid: 'events-per-user' }),
);
ctx.verify({ state: 'events-per-user', perRecord: () => 1 });
`;

const fraud = `// Fraud detection (Flink's classic): a probe of 0 followed within 1 minute by an amount over 500 raises an alert.
const { assignTimestamps, keyBy, process, valueState } = weir;

const probed = valueState('probed-at', { queryable: 'probed-at' });
const seen = valueState('tx-count', { default: 0, queryable: 'tx-count' });

ctx.input().pipe(
  assignTimestamps((tx) => tx.ts, { outOfOrderness: 0 }),
  keyBy((tx) => tx.user),
  process({
    onElement(tx, c, out) {
      c.state(seen).update(c.state(seen).value() + 1);
      const probedAt = c.state(probed).value();
      if (probedAt !== undefined && tx.amount > 500) {
        out.emit({ alert: 'probe then drain', account: tx.user, amount: tx.amount, seq: tx.seq });
        c.state(probed).clear();
      }
      if (tx.amount === 0) {
        c.state(probed).update(new Date(tx.ts));
        // Forget the probe after one minute of event time.
        c.timers.registerEventTimeTimer(tx.ts + 60_000);
      }
    },
    onTimer(time, c) {
      const probedAt = c.state(probed).value();
      if (probedAt !== undefined && probedAt.getTime() + 60_000 <= time) c.state(probed).clear();
    },
  }, { uid: 'fraud-detector' }),
  ctx.output(),
);

ctx.verify({ state: 'tx-count', perRecord: () => 1 });
`;

export const EXAMPLES: Example[] = [
  { id: 'word-count', title: 'Word count', doc: 'flatMap, keyBy, keyed process with ValueState', code: wordCount },
  { id: 'window-totals', title: 'Per-user tumbling window totals', doc: 'event time, tumbling windows, aggregate', code: windowTotals },
  { id: 'sessions', title: 'Sessionization', doc: 'session windows with a ProcessWindowFunction', code: sessions },
  { id: 'fraud', title: 'Fraud detection', doc: 'keyed process, state and event-time timers', code: fraud },
];
