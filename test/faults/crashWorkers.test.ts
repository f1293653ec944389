import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, killCycles, runChild, type ChildRun } from '../support/childJob';
import { random } from '../support/random';

// The crash test's keyed count on 2 worker threads: the file is read in byte ranges by a source subtask in each
// worker, `keyBy` moves each record to the worker that owns its key group, and worker 0 writes the output file
// exactly once. The process is killed with SIGKILL at random points and restarted until it finishes. Records
// interleave differently in every run, so the output is compared as a set of lines: each `{ user, n }` line is one
// user's running count, so a record lost leaves a line out and a record read twice repeats one.

const RECORDS = 40_000;
const USERS = 400;
const WORK = 2500;
const SPLITS = 4;
const MIN_KILLS = 30;
const SEED = 0x3_0_2_4;

const sortedLines = (output: string) => output.split('\n').filter(Boolean).sort().join('\n');

describe('crash recovery of a job on 2 worker threads in a real process (SIGKILL)', () => {
  let base = '';
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'weir-crash-workers-'));
    let input = '';
    for (let i = 0; i < RECORDS; i++) input += `{"user":"u${i % USERS}","n":1}\n`;
    await writeFile(join(base, 'input.jsonl'), input);
  });
  afterAll(() => rm(base, { recursive: true, force: true }));

  // Run from the sources under tsx: the workers import the same job module, which a bundle could not give them.
  const main = { file: join(ROOT, 'test/faults/fixtures/workersCrashMain.ts'), remove: () => Promise.resolve() };
  const run = (dir: string, killAfter?: number): Promise<ChildRun> =>
    runChild(main, [join(base, 'input.jsonl'), join(dir, 'out', 'out.jsonl'), join(dir, 'checkpoints'), String(WORK), String(SPLITS)], { afterMs: killAfter }, { NODE_OPTIONS: '--import tsx' });

  it(`survives ≥ ${MIN_KILLS} kills with every record counted once`, { timeout: 900_000 }, async () => {
    const clean = join(base, 'clean');
    await mkdir(join(clean, 'out'), { recursive: true });
    const reference = await run(clean);
    expect(reference.code, reference.stderr).toBe(0);
    const expected = await readFile(join(clean, 'out', 'out.jsonl'), 'utf8');
    let counted = '';
    for (let i = 0; i < RECORDS; i++) counted += `{"user":"u${i % USERS}","n":${Math.floor(i / USERS) + 1}}\n`;
    expect(sortedLines(expected)).toBe(sortedLines(counted));
    const next = random(SEED);
    const { kills, mismatches } = await killCycles({
      base,
      minKills: MIN_KILLS,
      expected,
      normalize: sortedLines,
      run: (dir) => run(dir, next() * reference.ranMs * 0.8),
    });
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
  });
});
