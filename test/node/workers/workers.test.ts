import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CheckpointNotFoundError, DEFAULT_MAX_PARALLELISM, InvalidQueryError, JobDefinitionError, keyGroupRangeFor, UnknownQueryableStateError, WeirError, type RunningJob } from 'weir';
import { fsCheckpointStorage, liveJobWorkers, startJob } from 'weir/node';
import type { KeyedSumSettings } from './jobs/keyedSum.js';
import type { SlowReceiverSettings } from './jobs/slowReceiver.js';
import { leftRecords, rightRecords } from './jobs/twoInputs.js';

const dir = mkdtempSync(join(tmpdir(), 'weir-workers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keyedSum = new URL('./jobs/keyedSum.ts', import.meta.url);
const preload = [new URL('./registerTsx.mjs', import.meta.url)];
let runs = 0;

/** The settings of a fresh run, with its own output file. */
function settings(overrides: Partial<KeyedSumSettings> = {}): KeyedSumSettings {
  runs++;
  return { name: `sum-${runs}`, out: join(dir, `out-${runs}.txt`), records: 2000, keys: 37, splits: 4, ...overrides };
}

async function run(job: KeyedSumSettings, options: { workers: number; restore?: 'latest' }) {
  process.env.WEIR_TEST_JOB = JSON.stringify(job);
  const running = await startJob(keyedSum, { ...options, preload });
  const result = await running.done;
  return { result, lines: lines(job.out) };
}

function lines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n').filter(Boolean).sort();
}

/** The final sum of every key, computed here. */
function expected(records: number, keys: number): string[] {
  // The job reads its splits in any interleaving: the final sums are what every interleaving agrees on, so the
  // tests compare those, and the line count (one running sum per record, exactly once).
  const sums = new Map<string, number>();
  for (let i = 0; i < records; i++) sums.set(`k${i % keys}`, (sums.get(`k${i % keys}`) ?? 0) + i);
  return [...sums].map(([key, sum]) => `${key}=${sum}`).sort();
}

/** Each key's last line: the final sums. */
function finals(output: string[]): string[] {
  const last = new Map<string, number>();
  for (const line of output) {
    const [key, value] = line.split('=');
    last.set(key!, Math.max(last.get(key!) ?? 0, Number(value)));
  }
  return [...last].map(([key, sum]) => `${key}=${sum}`).sort();
}

describe('startJob on worker threads', { timeout: 240_000 }, () => {
  it('computes with 2 workers what 1 worker computes, exactly once', async () => {
    const two = await run(settings({ checkpoints: 'memory' }), { workers: 2 });
    const one = await run(settings({ checkpoints: 'memory' }), { workers: 1 });
    expect(two.result.status).toBe('finished');
    expect(two.lines).toHaveLength(2000);
    expect(finals(two.lines)).toEqual(expected(2000, 37));
    expect(finals(one.lines)).toEqual(finals(two.lines));
    expect(one.lines).toHaveLength(2000);
  });
});

describe('checkpoints, restore and rescale across workers', { timeout: 240_000 }, () => {
  /** Runs a slowed job, stops it with a savepoint once it has checkpointed, and returns its output and what to restore. */
  async function stopMidway(job: KeyedSumSettings, start: () => Promise<RunningJob>) {
    const running = await start();
    await running.checkpoint();
    const result = await running.stop({ savepoint: { path: 'savepoints' } });
    expect(result.status).toBe('stopped');
    const last = result.checkpoints.at(-1)!;
    // Stopped after its input ended, the job's last checkpoint is its final one rather than the savepoint.
    return { lines: lines(job.out), restore: last.kind === 'savepoint' ? { savepoint: last.path } : last.path };
  }

  for (const [from, to] of [
    [2, 1],
    [2, 3],
    [0, 2],
  ] as const) {
    it(`a savepoint taken ${from === 0 ? 'on one thread' : `with ${from} workers`} restores with ${to} workers, each record once`, async () => {
      const checkpoints = join(dir, `ck-${from}-${to}`);
      const first = settings({ records: 4000, chunkSize: 1, checkpoints });
      process.env.WEIR_TEST_JOB = JSON.stringify(first);
      const start = from === 0 ? async () => (await import('./jobs/keyedSum.js')).default().start() : () => startJob(keyedSum, { workers: from, preload });
      const stopped = await stopMidway(first, start);
      // The restored sink appends to the same file, where its saved state says the committed output ends.
      const running = await startJob(keyedSum, { workers: to, preload, restore: stopped.restore });
      expect((await running.done).status).toBe('finished');
      const all = lines(first.out);
      expect(all.length).toBeGreaterThanOrEqual(stopped.lines.length);
      expect(all).toHaveLength(4000);
      expect(finals(all)).toEqual(expected(4000, 37));
      expect(liveJobWorkers()).toEqual([]);
    });
  }
});

describe('failures in workers', { timeout: 240_000 }, () => {
  for (const how of ['throw', 'exit'] as const) {
    it(`restarts from the latest checkpoint after a worker's user function ${how === 'throw' ? 'throws' : 'calls process.exit'}, output exactly once`, async () => {
      const job = settings({ records: 3000, chunkSize: 16, checkpoints: join(dir, `ck-fail-${how}`), interval: 20, failAt: { value: 2001, how, marker: join(dir, `failed-${how}`) } });
      const { result, lines: output } = await run(job, { workers: 2 });
      expect(result.status).toBe('finished');
      expect(result.restarts).toBe(1);
      expect(output).toHaveLength(3000);
      expect(finals(output)).toEqual(expected(3000, 37));
      expect(liveJobWorkers()).toEqual([]);
    });
  }

  it('names the worker and the cause when the restart strategy gives up', async () => {
    const job = settings({ records: 500, failAt: { value: 7, how: 'throw', marker: join(dir, 'never', 'marker') } });
    process.env.WEIR_TEST_JOB = JSON.stringify(job);
    const running = await startJob(keyedSum, { workers: 2, preload });
    const error = (await running.done.catch((failure: unknown) => failure)) as Error;
    expect(error).toBeInstanceOf(WeirError);
    expect(error.message).toMatch(/worker \d failed: .*ENOENT/);
    expect(liveJobWorkers()).toEqual([]);
  });

  it('cancel ends every worker', async () => {
    const job = settings({ records: 100_000, chunkSize: 1, checkpoints: 'memory' });
    process.env.WEIR_TEST_JOB = JSON.stringify(job);
    const running = await startJob(keyedSum, { workers: 2, preload });
    await running.checkpoint();
    expect(liveJobWorkers()).toHaveLength(2);
    expect((await running.cancel()).status).toBe('cancelled');
    expect(liveJobWorkers()).toEqual([]);
  });

  it('fails at once, naming the first difference, when a worker builds another graph', async () => {
    const running = await startJob(new URL('./jobs/unstableGraph.ts', import.meta.url), { workers: 2, preload });
    await expect(running.done).rejects.toThrow(/worker \d failed: JobDefinitionError: .*worker \d built another graph than the main thread: operator 1 is 'map-worker-\d' there, 'map-main'/);
    expect(running.restarts).toBe(0);
    expect(liveJobWorkers()).toEqual([]);
  });
});

describe('results on one thread and on workers', { timeout: 240_000 }, () => {
  it('are the same', async () => {
    const job = settings({ records: 1500 });
    process.env.WEIR_TEST_JOB = JSON.stringify(job);
    await (await import('./jobs/keyedSum.js')).default().start().done;
    const oneThread = lines(job.out);
    const { lines: two } = await run({ ...job, out: join(dir, 'out-two.txt') }, { workers: 2 });
    expect(two).toHaveLength(1500);
    expect(finals(two)).toEqual(finals(oneThread));
  });
});

describe('a windowed job on workers', { timeout: 240_000 }, () => {
  it('fires the same windows as on one thread', async () => {
    const windowed = new URL('./jobs/windowed.ts', import.meta.url);
    process.env.WEIR_TEST_JOB = JSON.stringify({ name: 'windowed-one', out: join(dir, 'windowed-one.txt') });
    await (await import('./jobs/windowed.js')).windowed().start().done;
    process.env.WEIR_TEST_JOB = JSON.stringify({ name: 'windowed-two', out: join(dir, 'windowed-two.txt') });
    const running = await startJob(windowed, { workers: 2, preload, export: 'windowed' });
    await running.done;
    const oneThread = lines(join(dir, 'windowed-one.txt'));
    expect(oneThread).toHaveLength(13 * 30);
    expect(lines(join(dir, 'windowed-two.txt'))).toEqual(oneThread);
  });

  it('with watermarks at the source, fires the same windows on 2 workers as on 1, without drawing records to worker 0', async () => {
    const windowed = new URL('./jobs/windowed.ts', import.meta.url);
    const outputs: string[][] = [];
    for (const workers of [1, 2]) {
      const out = join(dir, `windowed-at-source-${workers}.txt`);
      process.env.WEIR_TEST_JOB = JSON.stringify({ name: `windowed-at-source-${workers}`, out });
      const running = await startJob(windowed, { workers, preload, export: 'windowedAtSource' });
      expect((await running.done).status).toBe('finished');
      outputs.push(lines(out));
      if (workers === 2) {
        // Only the sink runs in worker 0 alone: the source's subtasks, their watermarks and the windows are spread.
        const alone = running.view().operators.filter((operator) => operator.workers?.length === 1);
        expect(alone.map((operator) => operator.uid)).toEqual(['out']);
        const windowIn = running.metrics.workers!.map((w) => w.operators.find((o) => o.uid === 'per-second')!.recordsIn);
        expect(windowIn.every((count) => count > 0)).toBe(true);
      }
    }
    // Every window of every key, none dropped as late: 13 keys over 30 s of event time.
    expect(outputs[0]).toHaveLength(13 * 30);
    expect(outputs[1]).toEqual(outputs[0]);
    process.env.WEIR_TEST_JOB = JSON.stringify({ name: 'windowed-at-source-thread', out: join(dir, 'windowed-at-source-thread.txt') });
    await (await import('./jobs/windowed.js')).windowedAtSource().start().done;
    expect(lines(join(dir, 'windowed-at-source-thread.txt'))).toEqual(outputs[0]);
  });
});

describe('two-input jobs on workers', { timeout: 240_000 }, () => {
  const twoInputs = new URL('./jobs/twoInputs.ts', import.meta.url);

  /** The output of `twoInputs`' export `name` run on `workers` workers. */
  async function twoInputsOn(name: 'connected' | 'joined', workers: number): Promise<string[]> {
    const out = join(dir, `${name}-${workers}.txt`);
    process.env.WEIR_TEST_JOB = JSON.stringify({ name: `${name}-${workers}`, out });
    const result = await (await startJob(twoInputs, { workers, preload, export: name })).done;
    expect(result.status).toBe('finished');
    return lines(out);
  }

  it('connect + coProcess: the state and timers of a key span both inputs, the same on 2 workers as on 1', async () => {
    const totals = new Map<string, { sum: number; count: number }>();
    const of = (key: string) => totals.get(key) ?? totals.set(key, { sum: 0, count: 0 }).get(key)!;
    for (const record of leftRecords()) of(record.key).sum += record.value;
    for (const record of rightRecords()) of(record.key).count++;
    const expectedTotals = [...totals].map(([key, { sum, count }]) => `${key}=${sum}/${count}`).sort();
    const two = await twoInputsOn('connected', 2);
    expect(two).toEqual(expectedTotals);
    expect(await twoInputsOn('connected', 1)).toEqual(two);
  });

  it('windowed join: every pair of one key in one window, the same on 2 workers as on 1', async () => {
    const pairs: string[] = [];
    for (const l of leftRecords()) {
      for (const r of rightRecords()) {
        if (l.key === r.key && Math.floor(l.at / 1_000) === Math.floor(r.at / 1_000)) pairs.push(`${l.key}@${Math.floor(l.at / 1_000)}:${l.value}+${r.value}`);
      }
    }
    const two = await twoInputsOn('joined', 2);
    expect(two).toHaveLength(pairs.length);
    expect(two).toEqual(pairs.sort());
    expect(await twoInputsOn('joined', 1)).toEqual(two);
  });
});

describe('credits between workers', { timeout: 240_000 }, () => {
  it('pause a worker whose records another worker has not taken yet, so its port does not buffer its whole input', async () => {
    // 400k records cross from worker 0 to worker 1, which spends µs on each: without credits worker 0 reads them
    // all long before worker 1 consumed a third. With them, worker 0 stays within the records in flight that the
    // exchange allows (65536), plus a source chunk, a batch and the reporting steps, plus what worker 1 took off its
    // port and has not processed yet: a receiver gives credits on receipt (so that two workers never wait on each
    // other), and a loaded CI run measured a lead of 130,048, one window more than the port holds.
    const job: SlowReceiverSettings = { name: 'slow-receiver', records: 400_000, progress: join(dir, 'progress.txt'), lead: join(dir, 'lead.txt') };
    process.env.WEIR_TEST_JOB = JSON.stringify(job);
    const result = await (await startJob(new URL('./jobs/slowReceiver.ts', import.meta.url), { workers: 2, preload })).done;
    expect(result.status).toBe('finished');
    const lead = Number(readFileSync(job.lead, 'utf8'));
    expect(lead).toBeGreaterThan(0);
    expect(lead).toBeLessThan(2 * 65_536 + 2 * 4096 + 1024 + 2 * 256);
  });
});

describe('restore on workers', { timeout: 240_000 }, () => {
  it("reads of a checkpoint's keyed-only files those that meet the worker's key groups", async () => {
    // Incremental checkpoints with 4 workers: the last one lists earlier checkpoints' files, keyed state only, each
    // of one old subtask's key groups. Restored on 2 workers, each worker needs half of them.
    const job = settings({ records: 20_000, chunkSize: 1, checkpoints: join(dir, 'ck-incremental'), incremental: true });
    process.env.WEIR_TEST_JOB = JSON.stringify(job);
    const first = await startJob(keyedSum, { workers: 4, preload });
    // A delta is taken after a full checkpoint while the deltas stay smaller than their base: how many records pass
    // between checkpoints decides which ones are full, so the test checkpoints until one is a delta (it restores more
    // than it wrote).
    let last = await first.checkpoint();
    for (let i = 0; i < 10 && !(last.fullSize > last.bytes); i++) last = await first.checkpoint();
    expect(last.status).toBe('completed');
    expect(last.fullSize).toBeGreaterThan(last.bytes);
    const { id } = last;
    await first.cancel();

    const reads: { worker: number; path: string }[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      for (const [, worker, path] of String(chunk).matchAll(/← worker (\d+): storage read (\S+)/g)) reads.push({ worker: Number(worker), path: path! });
      return write(chunk, ...rest);
    }) as typeof process.stderr.write;
    process.env.WEIR_WORKER_TRACE = '1';
    let result;
    try {
      result = await (await startJob(keyedSum, { workers: 2, preload, restore: 'latest' })).done;
    } finally {
      delete process.env.WEIR_WORKER_TRACE;
      process.stderr.write = write;
    }
    expect(result.status).toBe('finished');
    expect(finals(lines(job.out))).toEqual(expected(20_000, 37));
    // The sum's files of earlier checkpoints (shared, keyed state only), by the worker that read them.
    const shared = reads.filter(({ path }) => /\/sum\.\d+\.kg-/.test(path) && !path.includes(`chk-${id}/`));
    expect(shared.length).toBeGreaterThan(0);
    for (const { worker, path } of shared) {
      const [, start, end] = /kg-(\d+)-(\d+)/.exec(path)!.map(Number);
      const own = keyGroupRangeFor(worker, 2, DEFAULT_MAX_PARALLELISM);
      expect(start! <= own.end && end! >= own.start, `worker ${worker} read ${path}`).toBe(true);
    }
    // Each shared file is read by the one worker whose key groups it holds (as an old subtask's, in one new half).
    expect(new Set(shared.map(({ path }) => path)).size).toBe(shared.length);
  });
});

describe('unaligned checkpoints on workers', { timeout: 240_000 }, () => {
  it('are refused at start with a JobDefinitionError naming the ways that work, before any worker spawns', async () => {
    process.env.WEIR_TEST_JOB = JSON.stringify(settings({ checkpoints: 'memory', alignedTimeout: 100 }));
    const started = startJob(keyedSum, { workers: 2, preload });
    await expect(started).rejects.toBeInstanceOf(JobDefinitionError);
    await expect(started).rejects.toThrow(/alignedTimeout \(100 ms\).*drop alignedTimeout.*at-least-once.*job\.start\(\)/);
    expect(liveJobWorkers()).toEqual([]);
    // Without it the same job runs on workers, aligned.
    process.env.WEIR_TEST_JOB = JSON.stringify(settings({ checkpoints: 'memory' }));
    expect((await (await startJob(keyedSum, { workers: 2, preload })).done).status).toBe('finished');
  });
});

describe('the Node flags of workers', { timeout: 240_000 }, () => {
  it('are the ones startJob is given in execArgv, in place of those of the main thread', async () => {
    const out = join(dir, 'exec-argv.json');
    process.env.WEIR_TEST_JOB = JSON.stringify({ name: 'exec-argv', out });
    const flags = ['--no-warnings', '--no-deprecation'];
    await (await startJob(new URL('./jobs/execArgv.ts', import.meta.url), { workers: 1, preload, execArgv: flags })).done;
    const seen = JSON.parse(readFileSync(out, 'utf8')) as { threadId: number; execArgv: string[] };
    expect(seen.threadId).not.toBe(0);
    expect(seen.execArgv).toEqual(flags);
  });
});

describe('state queries on workers', { timeout: 240_000 }, () => {
  it('are answered by the workers that own the keys: by key, key listings merged over the workers, and asOf a checkpoint', async () => {
    process.env.WEIR_TEST_JOB = JSON.stringify(settings({ records: 100_000, keys: 40, chunkSize: 1, checkpoints: 'memory' }));
    const running = await startJob(keyedSum, { workers: 2, preload });
    const all = Array.from({ length: 40 }, (_, i) => `k${i}`).sort();
    // Each checkpoint lets more records through; every key is in the first few thousand.
    let listed: unknown[] = [];
    for (let round = 0; round < 200 && listed.length < 40; round++) {
      await running.checkpoint();
      listed = (await running.queryKeys('sums', { limit: 1000 })).keys;
    }
    // Both workers hold some of the keys (each its instance's key groups): the listing has every key once, in order.
    expect(listed).toEqual(all);
    // The workers tell the main thread the states they registered (the reduce's once it was used).
    await expect.poll(() => running.queryableStates().map(({ name, uid }) => ({ name, uid })), { timeout: 60_000 }).toEqual([{ name: 'sums', uid: 'sum' }]);
    const paged: unknown[] = [];
    let page = await running.queryKeys('sums', { limit: 7 });
    for (;;) {
      expect(page.keys.length).toBeLessThanOrEqual(7);
      paged.push(...page.keys);
      if (page.cursor === undefined) break;
      page = await running.queryKeys('sums', { limit: 7, cursor: page.cursor });
    }
    expect(paged).toEqual(all);
    expect((await running.queryKeys('sums', { prefix: 'k1' })).keys).toEqual(all.filter((key) => key.startsWith('k1')));
    for (const key of ['k0', 'k1', 'k2', 'k3']) expect((await running.query<{ key: string; value: number }>('sums', key))?.key).toBe(key);

    // As of a checkpoint, one worker reads it from the main thread's storage: every key, and the values it holds.
    const { id, status } = await running.checkpoint();
    expect(status).toBe('completed');
    expect((await running.queryKeys('sums', { asOf: id, limit: 1000 })).keys).toEqual(all);
    const then = await running.query<{ key: string; value: number }>('sums', 'k5', { asOf: id });
    expect(then?.key).toBe('k5');
    await running.checkpoint();
    expect((await running.query<{ key: string; value: number }>('sums', 'k5'))!.value).toBeGreaterThanOrEqual(then!.value);

    await expect(running.query('sums', 'k5', { asOf: id + 1_000 })).rejects.toBeInstanceOf(CheckpointNotFoundError);
    await expect(running.queryKeys('sums', { limit: 0 })).rejects.toBeInstanceOf(InvalidQueryError);
    await expect(running.query('no-such-state', 'k1')).rejects.toBeInstanceOf(UnknownQueryableStateError);
    await expect(running.queryKeys('no-such-state')).rejects.toBeInstanceOf(UnknownQueryableStateError);
    await expect(running.query('no-such-state', 'k1', { asOf: id })).rejects.toBeInstanceOf(UnknownQueryableStateError);
    await running.cancel();
    expect(liveJobWorkers()).toEqual([]);
    await expect(running.queryKeys('sums')).rejects.toThrow(/answer its queries \(live and asOf\) only while they run/);
  });
});

describe('savepoints into another storage from workers', { timeout: 240_000 }, () => {
  it('stop writes the savepoint there, and a restore from there goes on with each record once', async () => {
    const job = settings({ records: 4000, chunkSize: 1, checkpoints: join(dir, 'ck-other') });
    const other = fsCheckpointStorage(join(dir, 'elsewhere'));
    process.env.WEIR_TEST_JOB = JSON.stringify(job);
    const running = await startJob(keyedSum, { workers: 2, preload });
    await running.checkpoint();
    const result = await running.stop({ savepoint: { path: 'kept', storage: other } });
    const last = result.checkpoints.at(-1)!;
    const restore = last.kind === 'savepoint' ? { savepoint: last.path, storage: other } : last.path;
    if (last.kind === 'savepoint') expect(await other.list('kept')).toHaveLength(1);
    await (await startJob(keyedSum, { workers: 2, preload, restore })).done;
    const output = lines(job.out);
    expect(output).toHaveLength(4000);
    expect(finals(output)).toEqual(expected(4000, 37));
  });
});
