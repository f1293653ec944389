import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, bundleFixture, describeMismatch, runChild, type BundledFixture, type ChildRun } from '../support/childJob';
import { random } from '../support/random';
import type { AsyncJobConfig } from './fixtures/asyncJob';

// mapAsync under SIGKILL: a job whose async calls (random latency) are in flight at every checkpoint is killed at
// random moments and restarted with `restore: 'latest'` until it finishes. The records in flight at the restored
// checkpoint are called again, so the committed output of the transactional file sink equals a failure-free run:
// nothing missing, nothing twice.

const KILLS = process.env.FAULTS_LONG === '1' ? 40 : 10;
const SEED = Number(process.env.FAULTS_SEED ?? 0x0a5_c0de);
const RECORDS = 4_000;
const USERS = 40;

let base: string;
let bundle: BundledFixture;

const sorted = (text: string) => `${text.split('\n').filter(Boolean).sort().join('\n')}\n`;

function run(dir: string, plan: Parameters<typeof runChild>[2] = {}): Promise<ChildRun> {
  const config: AsyncJobConfig = { input: join(base, 'input.jsonl'), output: join(dir, 'out', 'out.jsonl'), checkpoints: join(dir, 'checkpoints') };
  return runChild(bundle, [JSON.stringify(config)], plan);
}

describe('mapAsync kill test: SIGKILL with calls in flight, restart until done', () => {
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'weir-async-faults-'));
    bundle = await bundleFixture(join(ROOT, 'test/faults/fixtures/asyncJob.ts'));
    let input = '';
    for (let i = 0; i < RECORDS; i++) input += `{"user":"u${i % USERS}","n":${1 + (i % 7)},"ts":${i}}\n`;
    await writeFile(join(base, 'input.jsonl'), input);
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
  });

  it(`commits the same output as a failure-free run after ≥ ${KILLS} kills`, { timeout: 180_000 }, async () => {
    const clean = join(base, 'clean');
    await mkdir(join(clean, 'out'), { recursive: true });
    const reference = await run(clean);
    expect(reference.code, reference.stderr).toBe(0);
    const expected = sorted(await readFile(join(clean, 'out', 'out.jsonl'), 'utf8'));
    // Every user has a window for each 400 ms of event time: 10 windows × 40 users.
    expect(expected.split('\n').filter(Boolean)).toHaveLength((RECORDS / 400) * USERS);

    const next = random(SEED);
    let kills = 0;
    const mismatches: string[] = [];
    for (let cycle = 0; kills < KILLS; cycle++) {
      const dir = join(base, `cycle-${cycle}`);
      await mkdir(join(dir, 'out'), { recursive: true });
      for (let attempt = 0; ; attempt++) {
        if (attempt > 40) throw new Error(`cycle ${cycle}: no finish after ${attempt} restarts; the job makes no progress`);
        const result = await run(dir, kills >= KILLS ? {} : { afterMs: next() * reference.ranMs * 0.9 });
        if (result.killed) {
          kills++;
          continue;
        }
        expect(result.code, `cycle ${cycle}, attempt ${attempt} failed:\n${result.stderr}`).toBe(0);
        const actual = sorted(await readFile(join(dir, 'out', 'out.jsonl'), 'utf8'));
        if (actual !== expected) mismatches.push(`cycle ${cycle} (after ${attempt} kills): ${describeMismatch(actual, expected)}`);
        break;
      }
      await rm(dir, { recursive: true, force: true });
    }
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(KILLS);
  });
});
