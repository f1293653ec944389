// What the crash tests (crash.test.ts, crashIncremental.test.ts) share: the keyed count of test/faults/fixtures/crashJob.ts
// bundled once, its input written once, and runs of it in a directory of their own.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { ROOT, bundleFixture, runChild, type BundledFixture, type ChildRun } from '../support/childJob';

/** The name the crash job checkpoints under. */
export const CRASH_JOB = 'crash-count';

/**
 * Registers the `beforeAll` that bundles the crash job and writes `records` events over `users` users to
 * `<base>/input.jsonl` (`base` a fresh temporary directory named after `prefix`), and the `afterAll` that removes both.
 * `run(dir, killAfter)` runs the job once over that input, output in `dir/out`, checkpoints in `dir/checkpoints`,
 * `work` busy-work rounds per record, SIGKILLed `killAfter` ms after it reports `started` if it still runs.
 */
export function crashJobRuns(prefix: string, { records, users, work, env = {} }: { records: number; users: number; work: number; env?: Record<string, string> }) {
  let base = '';
  let bundle: BundledFixture | undefined;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), prefix));
    bundle = await bundleFixture(join(ROOT, 'test/faults/fixtures/crashJob.ts'));
    let input = '';
    for (let i = 0; i < records; i++) input += `{"user":"u${i % users}","n":1}\n`;
    await writeFile(join(base, 'input.jsonl'), input);
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
  });

  const run = (dir: string, killAfter?: number): Promise<ChildRun> =>
    runChild(bundle!, [join(dir, '..', 'input.jsonl'), join(dir, 'out', 'out.jsonl'), join(dir, 'checkpoints'), String(work)], { afterMs: killAfter }, env);

  return {
    /** The temporary directory of this file's tests (set once `beforeAll` ran). */
    base: () => base,
    run,
    /** The failure-free run in `<base>/clean`: its output is the reference, and its duration scales the kill delays. */
    async reference(): Promise<{ ranMs: number; expected: string }> {
      const clean = join(base, 'clean');
      await mkdir(join(clean, 'out'), { recursive: true });
      const reference = await run(clean);
      expect(reference.code, reference.stderr).toBe(0);
      return { ranMs: reference.ranMs, expected: await readFile(join(clean, 'out', 'out.jsonl'), 'utf8') };
    },
  };
}
