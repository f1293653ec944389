import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { killCycles } from '../support/childJob';
import { random } from '../support/random';
import { CRASH_JOB, crashJobRuns } from './crashJobRuns';

// The real thing: a job in a child process, killed with SIGKILL at random points (seeded) and started again with
// `restore: 'latest'` until it finishes; its committed output must be exactly that of a run without failures.
// The kill campaign (test/faults/killCampaign.test.ts) does the same for more kinds of jobs and fault points.

const RECORDS = 100_000;
const USERS = 1000;
/** Busy-work rounds per record, so that a run lasts about a second and kills land mid-run. */
const WORK = 2500;
const MIN_KILLS = 20;
const SEED = 0x5eed_2024;

/** What the kill interrupted, judged by what it left on disk. */
async function interrupted(dir: string): Promise<{ checkpointWrite: boolean; uncommittedOutput: boolean }> {
  const jobDir = join(dir, 'checkpoints', CRASH_JOB);
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
  const job = crashJobRuns('weir-crash-', { records: RECORDS, users: USERS, work: WORK });

  it(`survives ≥ ${MIN_KILLS} kills at random points with exactly-once output`, { timeout: 180_000 }, async () => {
    const reference = await job.reference();
    const { expected } = reference;
    let counted = '';
    for (let i = 0; i < RECORDS; i++) counted += `{"user":"u${i % USERS}","n":${Math.floor(i / USERS) + 1}}\n`;
    expect(expected === counted, 'the failure-free run counts every record once, in order').toBe(true);

    const next = random(SEED);
    const phases = { early: 0, middle: 0, late: 0 };
    let duringCheckpointWrite = 0;
    let withUncommittedOutput = 0;
    const { kills, completed, mismatches } = await killCycles({
      base: job.base(),
      minKills: MIN_KILLS,
      expected,
      // Uniform over most of a failure-free run: restarts resume part-way, so the same delays fall early, mid-way
      // and late (final checkpoint, commit) in what is left of the input, and a short remainder finishes the cycle.
      run: (dir) => job.run(dir, next() * reference.ranMs * 0.8),
      async afterRun(dir, run) {
        if (!run.killed) return;
        const { checkpointWrite, uncommittedOutput } = await interrupted(dir);
        if (checkpointWrite) duringCheckpointWrite++;
        if (uncommittedOutput) withUncommittedOutput++;
        const committed = (await stat(join(dir, 'out', 'out.jsonl')).catch(() => ({ size: 0 }))).size / expected.length;
        phases[committed < 1 / 3 ? 'early' : committed < 2 / 3 ? 'middle' : 'late']++;
      },
    });

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
