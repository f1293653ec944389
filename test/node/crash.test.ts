import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, bundleFixture, describeMismatch, random, runChild, type BundledFixture, type ChildRun } from '../support/childJob';

// The real thing: a job in a child process, killed with SIGKILL at random points (seeded) and started again with
// `restore: 'latest'` until it finishes; its committed output must be exactly that of a run without failures.
// The kill campaign (test/faults/killCampaign.test.ts) does the same for more kinds of jobs and fault points.

const FIXTURE = join(ROOT, 'test/node/fixtures/crashJob.ts');
const JOB = 'crash-count';

const RECORDS = 100_000;
const USERS = 1000;
/** Busy-work rounds per record, so that a run lasts about a second and kills land mid-run. */
const WORK = 2500;
const MIN_KILLS = 20;
const SEED = 0x5eed_2024;

let bundle: BundledFixture;

/** Runs the job once; with `killAfter`, SIGKILLs it that many ms after it reports `started`, if it still runs. */
function runJob(dir: string, killAfter?: number): Promise<ChildRun> {
  return runChild(bundle, [join(dir, '..', 'input.jsonl'), join(dir, 'out', 'out.jsonl'), join(dir, 'checkpoints'), String(WORK)], { afterMs: killAfter });
}

/** What the kill interrupted, judged by what it left on disk. */
async function interrupted(dir: string): Promise<{ checkpointWrite: boolean; uncommittedOutput: boolean }> {
  const jobDir = join(dir, 'checkpoints', JOB);
  let checkpointWrite = false;
  for (const name of await readdir(jobDir).catch(() => [] as string[])) {
    if (!name.startsWith('chk-')) continue;
    const files = await readdir(join(jobDir, name)).catch(() => [] as string[]);
    // State files without `_metadata`, or a temp file: a checkpoint was being written.
    if (!files.includes('_metadata') || files.some((file) => file.endsWith('.tmp'))) checkpointWrite = true;
  }
  // Part files: lines pre-committed by a checkpoint, not yet appended to the output.
  const uncommittedOutput = (await readdir(join(dir, 'out'))).some((name) => name !== 'out.jsonl');
  return { checkpointWrite, uncommittedOutput };
}

describe('crash recovery of a real process (SIGKILL)', () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'weir-crash-'));
    bundle = await bundleFixture(FIXTURE);
    let input = '';
    for (let i = 0; i < RECORDS; i++) input += `{"user":"u${i % USERS}","n":1}\n`;
    await writeFile(join(base, 'input.jsonl'), input);
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
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
