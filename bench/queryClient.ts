// The client of the `query` bench group, in a process of its own: point queries over HTTP to a
// `serveQueryableState` server, through `QueryableStateClient`.
//   node --import tsx bench/queryClient.ts <url> <state> <keyCount> <rate | max> [concurrency]
// With a rate it sends that many queries per second (open loop, paced every 10 ms); with `max` it keeps
// `concurrency` queries in flight (closed loop). On the parent's 'mark' message it replies with its counters; on
// 'stop' it stops, replies once more and exits. It starts paused: 'resume' and 'pause' turn the queries on and off.
import { QueryableStateClient } from 'weir';

const [url, state, keyCountArg, rateArg, concurrencyArg] = process.argv.slice(2);
if (!url || !state || !keyCountArg || !rateArg) {
  console.error('usage: queryClient.ts <url> <state> <keyCount> <rate | max> [concurrency]');
  process.exit(2);
}
const keyCount = Number(keyCountArg);
const client = new QueryableStateClient(url, { timeoutMs: 30_000 });
let sent = 0;
let answered = 0;
let errors = 0;
let lastError = '';
let stopped = false;
let paused = true;
let resumed: () => void = () => undefined;
let next = 0;

function query(): Promise<void> {
  sent++;
  const key = `k${next++ % keyCount}`;
  return client.get<number>(state!, key).then(
    () => void answered++,
    (error: unknown) => {
      errors++;
      lastError = String(error);
    },
  );
}

const report = (type: string) => process.send!({ type, sent, answered, errors, lastError, at: performance.now() + performance.timeOrigin });

process.on('message', (message: string) => {
  if (message === 'mark') report('mark');
  if (message === 'pause') paused = true;
  if (message === 'resume') {
    paused = false;
    resumed();
  }
  if (message === 'stop') {
    stopped = true;
    report('stopped');
    process.exit(0);
  }
});

const whenResumed = () => new Promise<void>((resolve) => (resumed = resolve));

if (rateArg === 'max') {
  const concurrency = Number(concurrencyArg ?? 32);
  const worker = async () => {
    while (!stopped) {
      if (paused) await whenResumed();
      else await query();
    }
  };
  for (let i = 0; i < concurrency; i++) void worker();
} else {
  // Paced from each resume: every tick sends as many as the elapsed time allows, so that a late tick catches up.
  const rate = Number(rateArg);
  const run = async () => {
    while (!stopped) {
      if (paused) await whenResumed();
      const started = performance.now();
      const base = sent;
      while (!paused && !stopped) {
        const due = base + Math.floor(((performance.now() - started) / 1000) * rate);
        while (sent < due) void query();
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  };
  void run();
}
report('ready');
