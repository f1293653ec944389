import { access, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { killCycles } from '../support/childJob';
import { random } from '../support/random';
import { CRASH_JOB, crashJobRuns } from './crashJobRuns';

// The crash test (crash.test.ts) with incremental checkpoints on the LMDB backend: chains of a full checkpoint and
// deltas (fullEvery 3), two retained, SIGKILL at random points, restart with `restore: 'latest'`. The output must
// be exactly once, and after every kill each complete checkpoint must find every file it references.

const RECORDS = 60_000;
const USERS = 5000;
const WORK = 2500;
const MIN_KILLS = 10;
const SEED = 0x1c4e_2026;

/** Files referenced by complete checkpoints that are not on disk, as `chk-<id>/<file>`. */
async function missingReferences(dir: string): Promise<{ missing: string[]; shared: number }> {
  const jobDir = join(dir, 'checkpoints', CRASH_JOB);
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
  const job = crashJobRuns('weir-crash-incremental-', { records: RECORDS, users: USERS, work: WORK, env: { WEIR_CRASH_INCREMENTAL: '1' } });

  it(`survives ≥ ${MIN_KILLS} kills with exactly-once output, never losing a referenced file`, { timeout: 180_000 }, async () => {
    const reference = await job.reference();

    const next = random(SEED);
    let sharedSeen = 0;
    const { mismatches } = await killCycles({
      base: job.base(),
      minKills: MIN_KILLS,
      expected: reference.expected,
      run: (dir) => job.run(dir, next() * reference.ranMs * 0.8),
      async afterRun(dir, _run, where) {
        const { missing, shared } = await missingReferences(dir);
        expect(missing, `${where}: complete checkpoints reference missing files`).toEqual([]);
        sharedSeen += shared;
      },
    });
    expect(mismatches).toEqual([]);
    // The campaign did exercise chains: complete checkpoints referencing earlier ones' files were seen.
    expect(sharedSeen).toBeGreaterThan(0);
  });
});
