import { describe, expect, it } from 'vitest';
import { killCycles } from '../support/childJob';
import { random } from '../support/random';
import { crashJobRuns } from './crashJobRuns';

// The crash test's keyed count (test/faults/crash.test.ts) with its file read in byte ranges by two source subtasks,
// killed with SIGKILL at random points and restarted until it finishes. The subtasks' records interleave differently
// in every run, so the output is compared as a set of lines: each `{ user, n }` line is one user's running count, so a
// record lost leaves a line out and a record read twice repeats one.

const RECORDS = 60_000;
const USERS = 600;
const WORK = 2500;
const MIN_KILLS = 12;
const SEED = 0x5_911_75;

const sortedLines = (output: string) => output.split('\n').filter(Boolean).sort().join('\n');

describe('crash recovery of a source with splits in a real process (SIGKILL)', () => {
  const job = crashJobRuns('weir-crash-splits-', { records: RECORDS, users: USERS, work: WORK, env: { WEIR_CRASH_SPLITS: '5' } });

  it(`survives ≥ ${MIN_KILLS} kills with every record counted once`, { timeout: 240_000 }, async () => {
    const reference = await job.reference();
    let counted = '';
    for (let i = 0; i < RECORDS; i++) counted += `{"user":"u${i % USERS}","n":${Math.floor(i / USERS) + 1}}\n`;
    expect(sortedLines(reference.expected)).toBe(sortedLines(counted));
    const next = random(SEED);
    const { kills, mismatches } = await killCycles({
      base: job.base(),
      minKills: MIN_KILLS,
      expected: reference.expected,
      normalize: sortedLines,
      run: (dir) => job.run(dir, next() * reference.ranMs * 0.8),
    });
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
  });
});
