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
 * started without the bench's TypeScript loader (`execArgv: []`). The 2-vs-1 rows make their records with
 * `fromGenerator`, so that each worker makes only its own splits' records, as a load generator would (Flink's
 * `DataGeneratorSource`); the `-array` row reads an array every worker builds whole, as earlier sessions measured. `WEIR_BENCH_PARALLEL_RECORDS` shrinks the runs (a
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

async function twoVsOne(name: string, layout: 'owned' | 'shuffled', work: number, bar: number | undefined, input: 'array' | 'generator' = 'generator'): Promise<Result> {
  const data = { count: RECORDS, keys: 10_000, layout, input };
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

/** `BENCH_PARALLEL=checkpointing` (or `scaling`, comma-separated) runs only those parts; both by default. */
const PARTS = (process.env.BENCH_PARALLEL ?? 'scaling,checkpointing').split(',');

async function measure(): Promise<Result[]> {
  const results: Result[] = [];
  if (PARTS.includes('scaling')) {
    results.push(
      await twoVsOne('parallel/owned-splits-2-vs-1-workers', 'owned', 1500, 1.8),
      // The same job reading a 2M-record array that every worker builds whole at import (the figure of earlier sessions).
      await twoVsOne('parallel/owned-splits-array-2-vs-1-workers', 'owned', 1500, undefined, 'array'),
      await twoVsOne('parallel/shuffle-2-vs-1-workers', 'shuffled', 1500, 1.5),
      await twoVsOne('parallel/cheap-shuffle-2-vs-1-workers', 'shuffled', 0, undefined),
    );
  }
  if (PARTS.includes('checkpointing')) results.push(await checkpointingOnVsOff());
  return results;
}

/** Checkpoints are what this row measures: its input stays the array of earlier sessions, so that it compares. */
async function checkpointingOnVsOff(): Promise<Result> {
  const keys = process.env.WEIR_BENCH_PARALLEL_RECORDS === undefined ? 1_000_000 : RECORDS;
  const million = { count: Math.max(RECORDS, keys), keys, layout: 'shuffled' as const, input: 'array' as const };
  const best = await sideBySide({ off: () => run(2, million, 0), on: () => run(2, million, 0, 2_000) }, { rounds: 2, best: 'max' });
  return { name: 'parallel/checkpointing-on-vs-off-1M-2-workers', value: best.on / best.off, unit: 'ratio', bar: { op: '>=', value: 0.85 } };
}
