import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { startJob as StartJob } from 'weir/node';
import { perSecond, sideBySide } from './measure';
import { buildParallel } from './parallelBuild';
import type { ParallelSettings } from './parallelJob';
import type { Result } from './report';

/**
 * `parallel`: a job on 2 worker threads against the same job on 1 (`startJob`, issue 19). Each side is one run of
 * bench/parallelJob.ts over the same records, spawn and final checkpoint included. The engine and the job module
 * run built to JavaScript (bench/parallelBuild.ts, built before the runs), as users run weir's dist, in workers
 * started without the bench's TypeScript loader (`execArgv: []`). `WEIR_BENCH_PARALLEL_RECORDS` shrinks the runs (a
 * smoke run).
 */
const RECORDS = Number(process.env.WEIR_BENCH_PARALLEL_RECORDS ?? 2_000_000);

/** The built engine's `startJob` and the built job module. */
let built: { startJob: typeof StartJob; job: URL };

/** Records per second of one run on `workers` workers. */
async function run(workers: number, data: ParallelSettings['records'], work: number, interval?: number): Promise<number> {
  const { startJob, job } = built;
  const dir = interval === undefined ? undefined : await mkdtemp(join(tmpdir(), 'weir-bench-parallel-'));
  process.env.WEIR_BENCH_PARALLEL = JSON.stringify({ records: data, work, ...(dir ? { checkpoints: { dir, interval } } : {}) });
  const started = performance.now();
  const running = await startJob(job, { workers, execArgv: [] });
  await running.done;
  const ms = performance.now() - started;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  return perSecond(data.count, ms);
}

async function twoVsOne(name: string, layout: 'owned' | 'shuffled', work: number, bar: number | undefined): Promise<Result> {
  const data = { count: RECORDS, keys: 10_000, layout };
  const best = await sideBySide({ one: () => run(1, data, work), two: () => run(2, data, work) }, { rounds: 2, best: 'max' });
  return { name, value: best.two / best.one, unit: 'ratio', ...(bar !== undefined ? { bar: { op: '>=' as const, value: bar } } : {}) };
}

export async function parallel(): Promise<Result[]> {
  const build = await buildParallel();
  try {
    built = { startJob: ((await import(build.node.href)) as { startJob: typeof StartJob }).startJob, job: build.job };
    return await measure();
  } finally {
    await build.remove();
  }
}

async function measure(): Promise<Result[]> {
  const results = [
    await twoVsOne('parallel/owned-splits-2-vs-1-workers', 'owned', 1500, 1.8),
    await twoVsOne('parallel/shuffle-2-vs-1-workers', 'shuffled', 1500, 1.5),
    await twoVsOne('parallel/cheap-shuffle-2-vs-1-workers', 'shuffled', 0, undefined),
  ];
  const keys = process.env.WEIR_BENCH_PARALLEL_RECORDS === undefined ? 1_000_000 : RECORDS;
  const million = { count: Math.max(RECORDS, keys), keys, layout: 'shuffled' as const };
  const best = await sideBySide({ off: () => run(2, million, 0), on: () => run(2, million, 0, 2_000) }, { rounds: 2, best: 'max' });
  results.push({ name: 'parallel/checkpointing-on-vs-off-1M-2-workers', value: best.on / best.off, unit: 'ratio', bar: { op: '>=', value: 0.85 } });
  return results;
}
