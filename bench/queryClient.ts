// The client of the `query` bench group, in a process of its own: point queries over HTTP to a
// `serveQueryableState` server.
//   node --import tsx bench/queryClient.ts <url> <state> <keyCount> <rate | max> <concurrency> <http | fetch>
// `http` asks through node:http with a keep-alive agent (GET …/get?key=, the superjson answer parsed), `fetch` through
// weir's `QueryableStateClient`, which is on `fetch` (undici in Node): the same queries, but the client process itself
// takes about 55% of a core at 1,000 queries/s instead of 15%, which on a 2-core machine is taken from the job.
// With a rate it sends that many queries per second (open loop, paced every 10 ms); with `max` it keeps
// `concurrency` queries in flight (closed loop). On the parent's 'mark' message it replies with its counters; on
// 'stop' it stops, replies once more and exits. It starts paused: 'resume' and 'pause' turn the queries on and off.
import { Agent, request } from 'node:http';
import superjson from 'superjson';
import { QueryableStateClient } from 'weir';

const [url, state, keyCountArg, rateArg, concurrencyArg, kind] = process.argv.slice(2);
if (!url || !state || !keyCountArg || !rateArg || !concurrencyArg || (kind !== 'http' && kind !== 'fetch')) {
  console.error('usage: queryClient.ts <url> <state> <keyCount> <rate | max> <concurrency> <http | fetch>');
  process.exit(2);
}
const keyCount = Number(keyCountArg);
const concurrency = Number(concurrencyArg);
const client = new QueryableStateClient(url, { timeoutMs: 30_000 });
const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
let sent = 0;
let answered = 0;
let errors = 0;
let lastError = '';
let stopped = false;
let paused = true;
let resumed: () => void = () => undefined;
let next = 0;

/** One point query through node:http: what any HTTP client in another language would send. */
function httpGet(key: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const path = `${url}/v1/states/${encodeURIComponent(state!)}/get?key=${encodeURIComponent(key)}`;
    const req = request(path, { agent }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(superjson.parse<{ value: unknown }>(text).value) : reject(new Error(`${response.statusCode} ${text}`))));
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function query(): Promise<void> {
  sent++;
  const key = `k${next++ % keyCount}`;
  return (kind === 'http' ? httpGet(key) : client.get<number>(state!, key)).then(
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
