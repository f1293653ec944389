import { checkStatePayload } from '../../src/checkpoint/checkPayloads';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assignTimestamps, collect, createJob, keyBy, reduce, tumbling, window, type Collector, type JobOptions, type Source } from 'weir';
import { pausableSource } from '../checkpoint/jobFixtures';

export { pausableSource };

/** One event: `n` is its index and event time, so sums tell lost or double-counted events apart. */
export interface Ev {
  key: string;
  n: number;
}

/** 400 events over 37 keys, in event-time order. */
export const events: Ev[] = Array.from({ length: 400 }, (_, n) => ({ key: `k${(n * 7) % 37}`, n }));

/** A fresh temporary directory, removed by `cleanup`. */
export async function tempDir(prefix = 'weir-savepoint-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** The outputs of the rescale job, shared across its runs (each sink is exactly-once). */
export interface Outputs {
  sums: Collector<Ev>;
  windows: Collector<Ev>;
}

export function outputs(): Outputs {
  return { sums: collect<Ev>(), windows: collect<Ev>() };
}

/**
 * `in → assignTimestamps → keyBy(key) → { reduce sum 'sum' → 'sums-out', tumbling(20) window reduce 'win' → 'win-out' }`
 * with `parallelism` instances of both keyed operators: a rolling keyed reduce and event-time windows with timers.
 */
export function rescaleJob(options: Omit<JobOptions, 'name'> & { name?: string }, source: Source<Ev>, out: Outputs, parallelism: number) {
  const job = createJob({ chunkSize: 10, ...options, name: options.name ?? 'rescale' });
  const keyed = job.source(source, { uid: 'in' }).pipe(assignTimestamps((e: Ev) => e.n), keyBy((e: Ev) => e.key));
  const sum = (a: Ev, b: Ev): Ev => ({ key: a.key, n: a.n + b.n });
  keyed.pipe(reduce(sum, { uid: 'sum', parallelism }), out.sums.sink({ uid: 'sums-out' }));
  keyed.pipe(window(tumbling(20)), reduce(sum, { uid: 'win', parallelism }), out.windows.sink({ uid: 'win-out' }));
  return job;
}

export const byKeyThenN = (a: Ev, b: Ev) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.n - b.n);

/** Parses a weir file (header line, JSON payload) without checks: for looking at what a test wrote. */
export async function readWeirFile<T>(path: string): Promise<T> {
  const bytes = await readFile(path, 'utf8');
  const payload = JSON.parse(bytes.slice(bytes.indexOf('\n') + 1)) as { uid: string };
  // Through the readers' check, which also expands values written as rows (format 5) into plain entries.
  return checkStatePayload(payload, payload.uid, path) as T;
}

/** Every file under `dir` with its bytes, for before/after comparisons. */
export async function snapshotTree(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name);
    files.set(path, (await readFile(path)).toString('base64'));
  }
  return files;
}
