import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The real thing: a job in a child process, killed with SIGKILL at random points (seeded) and started again with
// `restore: 'latest'` until it finishes; its committed output must be exactly that of a run without failures.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = join(ROOT, 'test/node/fixtures/crashJob.ts');
// The child runs the fixture bundled once into plain JavaScript by the esbuild that tsx itself uses: it starts in a
// fraction of the CPU time `node --import tsx` takes (the loader thread, the transform cache), which adds up over
// dozens of restarts on a 2-core machine. 'weir' and 'weir/node' are resolved through the `paths` of tsconfig.json;
// packages stay external, and the bundle sits under node_modules/.cache so that node resolves them from there.
const BUNDLE = join(ROOT, 'node_modules/.cache/weir-crash-test', `crashJob-${process.pid}.mjs`);
const JOB = 'crash-count';

const RECORDS = 100_000;
const USERS = 1000;
/** Busy-work rounds per record, so that a run lasts about a second and kills land mid-run. */
const WORK = 2500;
const MIN_KILLS = 20;
const SEED = 0x5eed_2024;

/** mulberry32: a tiny seeded PRNG, so that a failing kill schedule can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Run {
  /** Exit code, or null when killed. */
  code: number | null;
  killed: boolean;
  /** Milliseconds from the child's `started` line to its exit. */
  ranMs: number;
  stderr: string;
}

async function bundleFixture(): Promise<void> {
  const esbuild = createRequire(createRequire(import.meta.url).resolve('tsx'))('esbuild') as typeof import('esbuild');
  await esbuild.build({
    entryPoints: [FIXTURE],
    outfile: BUNDLE,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'error',
  });
}

/** Runs the job once; with `killAfter`, SIGKILLs it that many ms after it reports `started`, if it still runs. */
function runJob(dir: string, killAfter?: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [BUNDLE, join(dir, '..', 'input.jsonl'), join(dir, 'out', 'out.jsonl'), join(dir, 'checkpoints'), String(WORK)],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    let startedAt: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    let killed = false;
    child.stdout.on('data', (data: Buffer) => {
      stdout += data.toString();
      if (startedAt === undefined && stdout.includes('started\n')) {
        startedAt = performance.now();
        if (killAfter !== undefined) {
          timer = setTimeout(() => {
            // Only a kill that reaches a running child counts.
            if (child.exitCode === null && child.signalCode === null) killed = child.kill('SIGKILL');
          }, killAfter);
        }
      }
    });
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const ranMs = startedAt === undefined ? 0 : performance.now() - startedAt;
      resolve({ code, killed: killed && signal === 'SIGKILL', ranMs, stderr });
    });
  });
}

/** What the kill interrupted, judged by what it left on disk. */
async function interrupted(dir: string): Promise<{ checkpointWrite: boolean; uncommittedOutput: boolean }> {
  const jobDir = join(dir, 'checkpoints', JOB);
  let checkpointWrite = false;
  for (const name of await readdir(jobDir).catch(() => [] as string[])) {
    const files = await readdir(join(jobDir, name)).catch(() => [] as string[]);
    // State files without `_metadata`, or a temp file: a checkpoint was being written.
    if (!files.includes('_metadata') || files.some((file) => file.endsWith('.tmp'))) checkpointWrite = true;
  }
  // Part files: lines pre-committed by a checkpoint, not yet appended to the output.
  const uncommittedOutput = (await readdir(join(dir, 'out'))).some((name) => name !== 'out.jsonl');
  return { checkpointWrite, uncommittedOutput };
}

/** How the committed output differs from the expected one, for the failure message. */
function describeMismatch(actual: string, expected: string): string {
  const got = actual.split('\n');
  const want = expected.split('\n');
  const first = want.findIndex((line, i) => got[i] !== line);
  const counts = new Map<string, number>();
  for (const line of got) counts.set(line, (counts.get(line) ?? 0) + 1);
  const duplicates = Array.from(counts.values()).filter((n) => n > 1).length;
  return `${got.length - 1} lines instead of ${want.length - 1}, ${duplicates} duplicated, first difference at line ${first + 1}: ${JSON.stringify(got[first])} instead of ${JSON.stringify(want[first])}`;
}

describe('crash recovery of a real process (SIGKILL)', () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'weir-crash-'));
    await bundleFixture();
    let input = '';
    for (let i = 0; i < RECORDS; i++) input += `{"user":"u${i % USERS}","n":1}\n`;
    await writeFile(join(base, 'input.jsonl'), input);
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
    await rm(BUNDLE, { force: true });
  });

  it(`survives ≥ ${MIN_KILLS} kills at random points with exactly-once output`, { timeout: 180_000 }, async () => {
    // The failure-free run: its output is the reference, and its duration scales the kill delays.
    const clean = join(base, 'clean');
    await mkdir(join(clean, 'out'), { recursive: true });
    const reference = await runJob(clean);
    expect(reference.code, reference.stderr).toBe(0);
    const expected = await readFile(join(clean, 'out', 'out.jsonl'), 'utf8');
    let counted = '';
    for (let i = 0; i < RECORDS; i++) counted += `{"user":"u${i % USERS}","n":${Math.floor(i / USERS) + 1}}\n`;
    expect(expected === counted, 'the failure-free run counts every record once, in order').toBe(true);

    const next = random(SEED);
    const phases = { early: 0, middle: 0, late: 0 };
    let kills = 0;
    let duringCheckpointWrite = 0;
    let withUncommittedOutput = 0;
    let completed = 0;
    const mismatches: string[] = [];
    // A cycle starts from empty output and checkpoints and restarts the job after every kill until it finishes;
    // cycles repeat until enough kills landed (a run that ends before its kill is simply a finished cycle).
    for (let cycle = 0; kills < MIN_KILLS; cycle++) {
      const dir = join(base, `cycle-${cycle}`);
      await mkdir(join(dir, 'out'), { recursive: true });
      for (let attempt = 0; ; attempt++) {
        if (attempt > 40) throw new Error(`cycle ${cycle}: the job did not finish after ${attempt} restarts; it makes no progress`);
        // Uniform over most of a failure-free run: restarts resume part-way, so the same delays fall early, mid-way
        // and late (final checkpoint, commit) in what is left of the input, and a short remainder finishes the cycle.
        const run = await runJob(dir, next() * reference.ranMs * 0.8);
        if (run.killed) {
          kills++;
          const { checkpointWrite, uncommittedOutput } = await interrupted(dir);
          if (checkpointWrite) duringCheckpointWrite++;
          if (uncommittedOutput) withUncommittedOutput++;
          const committed = (await stat(join(dir, 'out', 'out.jsonl')).catch(() => ({ size: 0 }))).size / expected.length;
          phases[committed < 1 / 3 ? 'early' : committed < 2 / 3 ? 'middle' : 'late']++;
          continue;
        }
        expect(run.code, `cycle ${cycle}, attempt ${attempt} failed:\n${run.stderr}`).toBe(0);
        const actual = await readFile(join(dir, 'out', 'out.jsonl'), 'utf8');
        completed++;
        if (actual !== expected) mismatches.push(`cycle ${cycle} (after ${attempt} kills): ${describeMismatch(actual, expected)}`);
        break;
      }
      await rm(dir, { recursive: true, force: true });
    }

    console.log(
      `${kills} kills survived, ${mismatches.length} mismatches ` +
        `(${completed} completed runs; kills by committed output: ${phases.early} early, ${phases.middle} middle, ${phases.late} late; ` +
        `${duringCheckpointWrite} while a checkpoint was being written, ${withUncommittedOutput} with pre-committed output not yet committed; ` +
        `seed ${SEED.toString(16)})`,
    );
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
  });
});
