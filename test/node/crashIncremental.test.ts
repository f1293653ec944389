import { access, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, bundleFixture, describeMismatch, random, runChild, type BundledFixture, type ChildRun } from '../support/childJob';

// The crash test (crash.test.ts) with incremental checkpoints on the LMDB backend: chains of a full checkpoint and
// deltas (fullEvery 3), two retained, SIGKILL at random points, restart with `restore: 'latest'`. The output must
// be exactly once, and after every kill each complete checkpoint must find every file it references.

const FIXTURE = join(ROOT, 'test/node/fixtures/crashJob.ts');
const JOB = 'crash-count';
const RECORDS = 60_000;
const USERS = 5000;
const WORK = 2500;
const MIN_KILLS = 10;
const SEED = 0x1c4e_2026;

let bundle: BundledFixture;

function runJob(dir: string, killAfter?: number): Promise<ChildRun> {
  return runChild(bundle, [join(dir, '..', 'input.jsonl'), join(dir, 'out', 'out.jsonl'), join(dir, 'checkpoints'), String(WORK)], { afterMs: killAfter }, { WEIR_CRASH_INCREMENTAL: '1' });
}

/** Files referenced by complete checkpoints that are not on disk, as `chk-<id>/<file>`. */
async function missingReferences(dir: string): Promise<{ missing: string[]; shared: number }> {
  const jobDir = join(dir, 'checkpoints', JOB);
  const missing: string[] = [];
  let shared = 0;
  for (const name of await readdir(jobDir).catch(() => [] as string[])) {
    const metadata = await readFile(join(jobDir, name, '_metadata'), 'utf8').catch(() => undefined);
    if (!name.startsWith('chk-') || metadata === undefined) continue;
    const { operators } = JSON.parse(metadata.split('\n')[1]!) as { operators: { files: { file: string; checkpoint?: number }[] }[] };
    for (const entry of operators.flatMap((operator) => operator.files)) {
      const where = entry.checkpoint === undefined ? `${name}/${entry.file}` : `chk-${entry.checkpoint}/${entry.file}`;
      if (entry.checkpoint !== undefined) shared++;
      if (!(await access(join(jobDir, where)).then(() => true, () => false))) missing.push(where);
    }
  }
  return { missing, shared };
}

describe('crash recovery with incremental checkpoints (SIGKILL)', () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'weir-crash-incremental-'));
    bundle = await bundleFixture(FIXTURE);
    let input = '';
    for (let i = 0; i < RECORDS; i++) input += `{"user":"u${i % USERS}","n":1}\n`;
    await writeFile(join(base, 'input.jsonl'), input);
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
  });

  it(`survives ≥ ${MIN_KILLS} kills with exactly-once output, never losing a referenced file`, { timeout: 180_000 }, async () => {
    const clean = join(base, 'clean');
    await mkdir(join(clean, 'out'), { recursive: true });
    const reference = await runJob(clean);
    expect(reference.code, reference.stderr).toBe(0);
    const expected = await readFile(join(clean, 'out', 'out.jsonl'), 'utf8');

    const next = random(SEED);
    let kills = 0;
    let sharedSeen = 0;
    const mismatches: string[] = [];
    for (let cycle = 0; kills < MIN_KILLS; cycle++) {
      const dir = join(base, `cycle-${cycle}`);
      await mkdir(join(dir, 'out'), { recursive: true });
      for (let attempt = 0; ; attempt++) {
        if (attempt > 40) throw new Error(`cycle ${cycle}: the job did not finish after ${attempt} restarts`);
        const run = await runJob(dir, next() * reference.ranMs * 0.8);
        const { missing, shared } = await missingReferences(dir);
        expect(missing, `cycle ${cycle}, attempt ${attempt}: complete checkpoints reference missing files`).toEqual([]);
        sharedSeen += shared;
        if (run.killed) {
          kills++;
          continue;
        }
        expect(run.code, `cycle ${cycle}, attempt ${attempt} failed:\n${run.stderr}`).toBe(0);
        const actual = await readFile(join(dir, 'out', 'out.jsonl'), 'utf8');
        if (actual !== expected) mismatches.push(`cycle ${cycle} (after ${attempt} kills): ${describeMismatch(actual, expected)}`);
        break;
      }
      await rm(dir, { recursive: true, force: true });
    }
    expect(mismatches).toEqual([]);
    // The campaign did exercise chains: complete checkpoints referencing earlier ones' files were seen.
    expect(sharedSeen).toBeGreaterThan(0);
  });
});
