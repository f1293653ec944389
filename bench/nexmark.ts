import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobResult } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { perSecond, sideBySide } from './measure';
import { generateEvents, type NexmarkEvent } from './nexmark/generator';
import type { NexmarkQuery } from './nexmark/nexmarkQuery';
import { nexmarkQueries } from './nexmark/queries';
import type { Result } from './report';

/** 2M events by default; `NEXMARK_EVENTS=100000 npm run bench -- nexmark` for a quick run. */
const EVENTS = Number(process.env.NEXMARK_EVENTS ?? 2_000_000);
/** Every query by default; `NEXMARK_QUERIES=q1,q2` runs those alone (in the bench's order), for a quick look at one. */
const QUERIES = process.env.NEXMARK_QUERIES?.split(',');
const ROUNDS = 3;
const CHECKPOINT_INTERVAL = 1_000;
/** The bars for weir over plain RxJS: the stateless queries at least as fast, the stateful ones within 20%. */
const BARS: Record<string, number> = { q1: 1, q2: 1, q3: 0.8, q5: 0.8, q7: 0.8, q8: 0.8 };

type Side = 'weir' | 'checkpointed' | 'rx' | 'loop';

/** weir with fs checkpoints every second in a fresh temp dir (removed after the run, off the clock). */
async function checkpointed<R>(query: NexmarkQuery<R>, events: readonly NexmarkEvent[], sink: (r: R) => void): Promise<{ ms: number; result: JobResult }> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-nexmark-'));
  const start = performance.now();
  const result = await query.weir(events, sink, { storage: fsCheckpointStorage(dir), interval: CHECKPOINT_INTERVAL });
  const ms = performance.now() - start;
  await rm(dir, { recursive: true, force: true });
  return { ms, result };
}

/** FNV-1a of a string: results are compared as the count and the sum of their canonical strings' hashes. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** One untimed run of every side, each folding its results into an order-independent digest; throws if they differ. */
async function checkAgreement<R>(query: NexmarkQuery<R>, events: readonly NexmarkEvent[]): Promise<number> {
  const digests = {} as Record<Side, { count: number; sum: number }>;
  const sinkFor = (side: Side) => {
    const digest = (digests[side] = { count: 0, sum: 0 });
    return (r: R) => {
      digest.count++;
      digest.sum = (digest.sum + hash(query.canonical(r))) % 2 ** 32;
    };
  };
  await query.weir(events, sinkFor('weir'));
  await checkpointed(query, events, sinkFor('checkpointed'));
  await query.rx(events, sinkFor('rx'));
  query.loop(events, sinkFor('loop'));
  const { weir } = digests;
  for (const side of ['checkpointed', 'rx', 'loop'] as const) {
    const other = digests[side];
    if (other.count !== weir.count || other.sum !== weir.sum) {
      throw new Error(`nexmark ${query.name}: weir and ${side} disagree: ${weir.count} results (digest ${weir.sum}) vs ${other.count} (digest ${other.sum})`);
    }
  }
  if (weir.count === 0) throw new Error(`nexmark ${query.name}: no results from ${events.length} events`);
  return weir.count;
}

async function measureQuery<R>(query: NexmarkQuery<R>, events: readonly NexmarkEvent[]): Promise<Result[]> {
  const results = await checkAgreement(query, events);
  let periodicCheckpoints = Number.POSITIVE_INFINITY;
  /** Times one side's run with a sink that only counts, and checks that it emitted what the checked run did. */
  const timed = (side: Side, run: (sink: () => void) => Promise<number> | number) => async (): Promise<number> => {
    let count = 0;
    const ms = await run(() => void count++);
    if (count !== results) throw new Error(`nexmark ${query.name}: ${side} emitted ${count} results in a timed run, ${results} in the checked one`);
    return perSecond(events.length, ms);
  };
  const clocked = async (run: () => unknown): Promise<number> => {
    const start = performance.now();
    await run();
    return performance.now() - start;
  };
  const best = await sideBySide<Side>(
    {
      weir: timed('weir', (sink) => clocked(() => query.weir(events, sink))),
      checkpointed: timed('checkpointed', async (sink) => {
        const { ms, result } = await checkpointed(query, events, sink);
        periodicCheckpoints = Math.min(periodicCheckpoints, result.checkpoints.filter((c) => !c.final).length);
        return ms;
      }),
      rx: timed('rx', (sink) => clocked(() => query.rx(events, sink))),
      loop: timed('loop', (sink) => clocked(() => query.loop(events, sink))),
    },
    { rounds: ROUNDS, best: 'max' },
  );
  const name = `nexmark/${query.name}`;
  console.error(`[bench] nexmark ${query.name}: ${results} results; weir ${(best.weir / 1e6).toFixed(2)}M, rx ${(best.rx / 1e6).toFixed(2)}M, loop ${(best.loop / 1e6).toFixed(2)}M events/s`);
  return [
    { name: `${name}-weir`, value: best.weir, unit: 'events/s' },
    { name: `${name}-rx`, value: best.rx, unit: 'events/s' },
    { name: `${name}-loop`, value: best.loop, unit: 'events/s' },
    { name: `${name}-checkpointed`, value: best.checkpointed, unit: 'events/s' },
    { name: `${name}-results`, value: results, unit: 'count' },
    { name: `${name}-periodic-checkpoints`, value: periodicCheckpoints, unit: 'count' },
    { name: `${name}-weir-vs-rx`, value: best.weir / best.rx, unit: 'ratio', bar: { op: '>=', value: BARS[query.name]! } },
    { name: `${name}-weir-vs-loop`, value: best.weir / best.loop, unit: 'ratio' },
    { name: `${name}-checkpointed-vs-off`, value: best.checkpointed / best.weir, unit: 'ratio' },
  ];
}

/**
 * `nexmark`: Nexmark's Q1, Q2, Q3, Q5, Q7 and Q8 over 2M generated events (persons, auctions and bids in event-time
 * order, up to 50 ms out of order), each query written with weir's operators, by hand in plain RxJS and as a plain
 * loop, run side by side in this process; their results must agree. weir runs again with fs checkpoints every second.
 */
export async function nexmark(): Promise<Result[]> {
  if (!(Number.isInteger(EVENTS) && EVENTS > 0)) throw new Error(`nexmark: NEXMARK_EVENTS must be a positive integer, got '${process.env.NEXMARK_EVENTS}'`);
  const queries = nexmarkQueries.filter((query) => QUERIES?.includes(query.name) ?? true);
  if (queries.length === 0) throw new Error(`nexmark: NEXMARK_QUERIES names none of ${nexmarkQueries.map((query) => query.name).join(', ')}`);
  const events = generateEvents(EVENTS);
  const results: Result[] = [];
  for (const query of queries) results.push(...(await measureQuery(query, events)));
  return results;
}
