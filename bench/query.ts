import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createJob, forEach, fromArray, heapStateBackend, keyBy, process as processFn, reduce, valueState, type KeyPage, type QueryableStateReader, type RunningJob, type Source, type SourceReader } from 'weir';
import { fsCheckpointStorage, serveQueryableState } from 'weir/node';
import { makeEvents, noop, perSecond, sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const EVENTS = 8_000_000;
const KEYS = 10_000;
const QPS = 1_000;
/** Queries in flight at once when the client asks as fast as it gets answers. */
const MAX_CONCURRENCY = 16;
const INSPECT_KEYS = 1_000_000;
const STATE = 'sums';

const clientScript = fileURLToPath(new URL('./queryClient.ts', import.meta.url));
const weirBin = fileURLToPath(new URL('../bin/weir.js', import.meta.url));

const sum = valueState<number>('sum', { default: 0, queryable: STATE });

/** A source of `records` that waits for `open()` before its first record: the client is at its pace before the clock starts. */
function gatedSource<T>(records: readonly T[]): { source: Source<T>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const inner = fromArray(records);
  return {
    open: () => open(),
    source: {
      name: `gated(${inner.name})`,
      replayable: false,
      open(context) {
        // fromArray opens synchronously.
        const reader = inner.open(context) as SourceReader<T>;
        let first = true;
        return {
          read(max) {
            if (!first) return reader.read(max);
            first = false;
            return opened.then(() => reader.read(max));
          },
          offset: () => reader.offset(),
        };
      },
    },
  };
}

/** The running job the servers answer for; between runs, nothing (queries then answer `undefined`). */
let current: RunningJob | undefined;
const reader: QueryableStateReader = {
  query: (name, key, options) => (current ? current.query(name, key, options) : Promise.resolve(undefined)),
  queryKeys: (name, options) => (current ? current.queryKeys(name, options) : Promise.resolve({ keys: [] } as unknown as KeyPage)),
  queryableStates: () => current?.queryableStates() ?? [],
};

interface Counters {
  sent: number;
  answered: number;
  errors: number;
  lastError: string;
  at: number;
}

/** How the client asks (see bench/queryClient.ts): node:http, or weir's `QueryableStateClient` on `fetch`. */
type ClientKind = 'http' | 'fetch';

/** The query client in its own process, paused until `resume`. */
class Client {
  private readonly child: ChildProcess;
  readonly ready: Promise<Counters>;

  constructor(url: string, mode: number | 'max', kind: ClientKind) {
    this.child = fork(clientScript, [url, STATE, String(KEYS), String(mode), String(MAX_CONCURRENCY), kind], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.ready = this.next();
    this.child.on('message', (message: Counters) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      waiting?.resolve(message);
    });
    this.child.on('exit', (code) => this.waiting?.reject(new Error(`the query client exited (${code})`)));
  }

  private waiting: { resolve: (counters: Counters) => void; reject: (error: Error) => void } | undefined;

  private next(): Promise<Counters> {
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  resume(): void {
    this.child.send('resume');
  }

  pause(): void {
    this.child.send('pause');
  }

  mark(): Promise<Counters> {
    const reply = this.next();
    this.child.send('mark');
    return reply;
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send('stop');
    await exited;
  }
}

interface Run {
  eventsPerSecond: number;
  /** Queries answered per second while the job ran (0 without a client). */
  answeredPerSecond: number;
  errors: number;
}

/** keyBy → process summing into a queryable value state, with a client querying it meanwhile (or none). */
async function keyedJob(events: KeyedEvent[], client: Client | undefined): Promise<Run> {
  const { source, open } = gatedSource(events);
  const job = createJob({ name: 'bench-query', stateBackend: heapStateBackend() });
  job.source(source, { uid: 'events' }).pipe(
    keyBy((e) => e.key),
    processFn<KeyedEvent, number>(
      {
        onElement(e, ctx, out) {
          const state = ctx.state(sum);
          const next = state.value()! + e.n;
          state.update(next);
          out.emit(next);
        },
      },
      // Listed, so that the state is queryable from the start, before the first record.
      { uid: 'sum', states: [sum] },
    ),
    forEach(noop),
  );
  const running = job.start();
  current = running;
  // Let the client reach its pace against this job before the clock starts.
  if (client) {
    client.resume();
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  const before = await client?.mark();
  const start = performance.now();
  open();
  await running.done;
  const ms = performance.now() - start;
  const after = await client?.mark();
  client?.pause();
  current = undefined;
  const answered = before && after ? after.answered - before.answered : 0;
  const errors = before && after ? after.errors - before.errors : 0;
  if (after && errors > 0) console.error(`[bench] query: ${errors} queries failed while the job ran, the last: ${after.lastError}`);
  return { eventsPerSecond: perSecond(events.length, ms), answeredPerSecond: answered / (ms / 1000), errors };
}

/** Runs the job with the client, then without it, alternating; best throughput of each, with the rate at the best. */
async function withAndWithout(events: KeyedEvent[], url: string, mode: number | 'max', kind: ClientKind): Promise<{ with: Run; without: Run }> {
  const client = new Client(url, mode, kind);
  await client.ready;
  const runs: { with?: Run; without?: Run } = {};
  try {
    const best = await sideBySide(
      {
        with: async () => {
          const run = await keyedJob(events, client);
          if (!runs.with || run.eventsPerSecond > runs.with.eventsPerSecond) runs.with = run;
          return run.eventsPerSecond;
        },
        without: async () => {
          // The client is paused: nothing is asked while the job runs alone.
          const run = await keyedJob(events, undefined);
          if (!runs.without || run.eventsPerSecond > runs.without.eventsPerSecond) runs.without = run;
          return run.eventsPerSecond;
        },
      },
      { rounds: 3, best: 'max' },
    );
    void best;
  } finally {
    await client.stop();
  }
  return { with: runs.with!, without: runs.without! };
}

/** A 1M-key checkpoint on the file system, then `weir inspect <dir> --json`: seconds, best of 2. */
async function inspectOpen(): Promise<Result[]> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-inspect-'));
  try {
    const events = makeEvents(INSPECT_KEYS, INSPECT_KEYS);
    const job = createJob({ name: 'bench-inspect', checkpoints: { storage: fsCheckpointStorage(dir) } });
    job.source(fromArray(events), { uid: 'events' }).pipe(
      keyBy((e) => e.key),
      reduce((a: KeyedEvent, b: KeyedEvent) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
      forEach(noop),
    );
    const result = await job.start().done;
    const last = result.checkpoints.at(-1);
    if (last?.status !== 'completed') throw new Error(`inspect bench: the 1M-key job's final checkpoint is ${last?.status ?? 'missing'}`);
    let best = Number.POSITIVE_INFINITY;
    let keyCount = 0;
    for (let round = 0; round < 2; round++) {
      const start = performance.now();
      const run = spawnSync(process.execPath, [weirBin, 'inspect', dir, '--json'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, timeout: 120_000 });
      const seconds = (performance.now() - start) / 1000;
      if (run.status !== 0) throw new Error(`weir inspect failed (${run.status}): ${run.stderr.slice(-400)}`);
      // The largest key count of any state in the report: the reduce's, 1M.
      keyCount = Math.max(0, ...Array.from(run.stdout.matchAll(/"keys":\s*(\d+)/g), (match) => Number(match[1])));
      best = Math.min(best, seconds);
    }
    console.error(`[bench] inspect: ${(last.bytes / 1e6).toFixed(1)} MB checkpoint, the report counts ${keyCount} keys, best ${best.toFixed(2)} s`);
    return [{ name: 'inspect/1M-keys-open-s', value: best, unit: 's' }];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `query`: a keyed job with queryable state while a client in another process sends 1,000 point queries per second
 * over HTTP (`serveQueryableState`, default limits) for the whole run, against the same job without queries — the
 * bar with a node:http client, and recorded beside it with `QueryableStateClient`, whose `fetch` makes the client
 * process itself heavier; then the node:http client as fast as it gets answers (16 in flight, no rate limit) for the
 * highest sustained rate and the job's throughput at it; and the time `weir inspect --json` takes to summarise a
 * 1M-key checkpoint.
 */
export async function query(): Promise<Result[]> {
  const events = makeEvents(EVENTS, KEYS);
  const limited = await serveQueryableState(reader, { port: 0 });
  const unlimited = await serveQueryableState(reader, { port: 0, rateLimit: false });
  try {
    const paced = await withAndWithout(events, limited.url, QPS, 'http');
    const pacedFetch = await withAndWithout(events, limited.url, QPS, 'fetch');
    const flat = await withAndWithout(events, unlimited.url, 'max', 'http');
    console.error(
      `[bench] query: paced client answered ${paced.with.answeredPerSecond.toFixed(0)}/s during the job ` +
        `(through QueryableStateClient ${pacedFetch.with.answeredPerSecond.toFixed(0)}/s); unpaced ${flat.with.answeredPerSecond.toFixed(0)}/s (${flat.with.errors} errors)`,
    );
    return [
      { name: 'query/job-with-1k-qps', value: paced.with.eventsPerSecond, unit: 'events/s' },
      { name: 'query/job-without-queries', value: paced.without.eventsPerSecond, unit: 'events/s' },
      { name: 'query/answered-at-1k-qps', value: paced.with.answeredPerSecond, unit: 'queries/s' },
      { name: 'query/job-throughput-with-1k-qps-vs-without', value: paced.with.eventsPerSecond / paced.without.eventsPerSecond, unit: 'ratio', bar: { op: '>=', value: 0.9 } },
      // The same with the client process asking through QueryableStateClient (fetch), which costs the machine more.
      { name: 'query/job-throughput-with-1k-qps-fetch-client-vs-without', value: pacedFetch.with.eventsPerSecond / pacedFetch.without.eventsPerSecond, unit: 'ratio' },
      { name: 'query/max-point-queries-per-s', value: flat.with.answeredPerSecond, unit: 'queries/s' },
      { name: 'query/job-throughput-at-max-qps-vs-without', value: flat.with.eventsPerSecond / flat.without.eventsPerSecond, unit: 'ratio' },
      ...(await inspectOpen()),
    ];
  } finally {
    await limited.close();
    await unlimited.close();
  }
}
