import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSavepoint } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { loadLatestCheckpoint } from '../../src/checkpoint/loadCheckpoint';
import { ROOT, bundleFixture, describeMismatch, runChild, type BundledFixture, type ChildRun } from '../support/childJob';
import { random } from '../support/random';
import type { FaultJobConfig } from './fixtures/faultJob';

// The kill campaign: jobs of several shapes (keyed state, event-time windows with timers, two sources unioned into
// keyed state; heap and LMDB backends; full and incremental checkpoints; the transactional file sink) run in a child process that is killed with
// SIGKILL at random moments and at chosen fault points (before `_metadata`, before a state file, half-way through
// retention, while a savepoint is written), then restarted with `restore: 'latest'` until it finishes. The committed
// output must equal that of a failure-free run, and after every kill the newest complete checkpoint and every
// complete savepoint must read back whole. FAULTS_LONG=1 kills many more times; FAULTS_SEED replays a schedule.

const LONG = process.env.FAULTS_LONG === '1';
const KILLS_PER_SCENARIO = LONG ? 30 : 6;
const SEED = Number(process.env.FAULTS_SEED ?? 0x0fa1_7ed);
const RECORDS = 12_000;
const USERS = 150;
const WORK = 8000;

interface Scenario {
  name: string;
  config: Pick<FaultJobConfig, 'scenario' | 'backend' | 'hook' | 'incremental'>;
  /** Whether output order is deterministic (one input in order); else lines are compared as a multiset. */
  ordered: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: 'keyed state, heap, random kills', config: { scenario: 'keyed', backend: 'heap' }, ordered: true },
  { name: 'keyed state, LMDB, random kills', config: { scenario: 'keyed', backend: 'lmdb' }, ordered: true },
  { name: 'event-time windows with timers, heap, random kills', config: { scenario: 'window', backend: 'heap' }, ordered: false },
  { name: 'union of two sources into keyed state, heap, random kills', config: { scenario: 'union', backend: 'heap' }, ordered: false },
  { name: 'windows, LMDB, killed before a state file', config: { scenario: 'window', backend: 'lmdb', hook: 'state' }, ordered: false },
  { name: 'keyed state, killed between the last state file and _metadata', config: { scenario: 'keyed', backend: 'heap', hook: 'metadata' }, ordered: true },
  { name: 'keyed state, killed half-way through retention cleanup', config: { scenario: 'keyed', backend: 'heap', hook: 'retention' }, ordered: true },
  { name: 'union, LMDB, killed while a savepoint is written', config: { scenario: 'union', backend: 'lmdb', hook: 'savepoint' }, ordered: false },
  { name: 'incremental checkpoints, keyed state, LMDB, random kills', config: { scenario: 'keyed', backend: 'lmdb', incremental: true }, ordered: true },
  { name: 'incremental checkpoints, windows, heap, killed before _metadata', config: { scenario: 'window', backend: 'heap', incremental: true, hook: 'metadata' }, ordered: false },
];

const totals = { kills: 0, mismatches: 0, runs: 0, atHook: 0, metadataMissing: 0 };
let base: string;
let bundle: BundledFixture;

function configFor(dir: string, scenario: Scenario): FaultJobConfig {
  const inputs = scenario.config.scenario === 'union' ? [join(base, 'left.jsonl'), join(base, 'right.jsonl')] : [join(base, 'input.jsonl')];
  return {
    ...scenario.config,
    inputs,
    output: join(dir, 'out', 'out.jsonl'),
    checkpoints: join(dir, 'checkpoints'),
    lmdb: join(dir, 'lmdb'),
    work: WORK,
  };
}

function run(config: FaultJobConfig, plan: Parameters<typeof runChild>[2] = {}): Promise<ChildRun> {
  return runChild(bundle, [JSON.stringify(config)], plan);
}

const normalise = (text: string, ordered: boolean) => (ordered ? text : `${text.split('\n').filter(Boolean).sort().join('\n')}\n`);

/** What a kill must never do: leave the newest complete checkpoint or a complete savepoint unreadable. */
async function checkDurableState(config: FaultJobConfig, job: string): Promise<string[]> {
  const problems: string[] = [];
  const storage = fsCheckpointStorage(config.checkpoints, { lock: false });
  const warnings: string[] = [];
  await loadLatestCheckpoint(storage, job, (message) => warnings.push(message)).catch((error: unknown) => problems.push(`latest checkpoint: ${String(error)}`));
  // Retention deletes old checkpoints; a kill half-way through may leave one of those damaged, never the newest.
  if (warnings.length > 0) problems.push(`the newest complete checkpoint was damaged: ${warnings.join('; ')}`);
  for (const name of await readdir(join(config.checkpoints, 'savepoints')).catch(() => [] as string[])) {
    const files = await readdir(join(config.checkpoints, 'savepoints', name)).catch(() => [] as string[]);
    if (!files.includes('_metadata')) continue;
    try {
      const savepoint = await readSavepoint(storage, `savepoints/${name}`);
      for (const operator of savepoint.operators) await savepoint.operatorState(operator.uid);
    } catch (error) {
      problems.push(`savepoint ${name}: ${String(error)}`);
    }
  }
  return problems;
}

/** Whether a `chk-<n>` directory holds state files but no `_metadata`: the kill fell between them. */
async function killedBeforeMetadata(config: FaultJobConfig, job: string): Promise<boolean> {
  const jobDir = join(config.checkpoints, job);
  for (const name of await readdir(jobDir).catch(() => [] as string[])) {
    if (!name.startsWith('chk-')) continue;
    const files = (await readdir(join(jobDir, name)).catch(() => [] as string[])).filter((file) => !file.endsWith('.tmp'));
    if (files.length > 0 && !files.includes('_metadata')) return true;
  }
  return false;
}

describe('kill campaign: SIGKILL at random points and fault points, restart until done', () => {
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'weir-faults-'));
    bundle = await bundleFixture(join(ROOT, 'test/faults/fixtures/faultJob.ts'));
    const line = (i: number) => `{"user":"u${i % USERS}","n":1,"ts":${i}}\n`;
    let all = '';
    let left = '';
    let right = '';
    for (let i = 0; i < RECORDS; i++) {
      all += line(i);
      if (i % 2 === 0) left += line(i);
      else right += line(i);
    }
    await Promise.all([writeFile(join(base, 'input.jsonl'), all), writeFile(join(base, 'left.jsonl'), left), writeFile(join(base, 'right.jsonl'), right)]);
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
    console.log(
      `kill campaign: ${totals.kills} kills survived, ${totals.mismatches} mismatches ` +
        `(${SCENARIOS.length} scenarios, ${totals.runs} child runs, ${totals.atHook} kills at a fault point, ` +
        `${totals.metadataMissing} with state files written and _metadata not; seed ${SEED.toString(16)})`,
    );
  });

  SCENARIOS.forEach((scenario, index) => {
    it(scenario.name, { timeout: LONG ? 1_800_000 : 120_000 }, async () => {
      const job = `fault-${scenario.config.scenario}`;
      const clean = join(base, `s${index}-clean`);
      await mkdir(join(clean, 'out'), { recursive: true });
      const reference = await run(configFor(clean, { ...scenario, config: { ...scenario.config, hook: undefined } }));
      totals.runs++;
      expect(reference.code, reference.stderr).toBe(0);
      const expected = normalise(await readFile(join(clean, 'out', 'out.jsonl'), 'utf8'), scenario.ordered);
      expect(expected.split('\n').length).toBeGreaterThan(USERS);

      const next = random(SEED + index);
      let kills = 0;
      const mismatches: string[] = [];
      for (let cycle = 0; kills < KILLS_PER_SCENARIO; cycle++) {
        const dir = join(base, `s${index}-cycle-${cycle}`);
        await mkdir(join(dir, 'out'), { recursive: true });
        const config = configFor(dir, scenario);
        for (let attempt = 0; ; attempt++) {
          if (attempt > 40) throw new Error(`${scenario.name}, cycle ${cycle}: no finish after ${attempt} restarts; the job makes no progress`);
          // Half the kills at the fault point (its 1st to 4th occurrence), half at a random moment; never more
          // kills than the scenario needs, so that the cycle finishes.
          const atHook = scenario.config.hook !== undefined && next() < 0.5;
          const plan =
            kills >= KILLS_PER_SCENARIO
              ? {}
              : atHook
                ? { onHook: { name: scenario.config.hook!, skip: Math.floor(next() * 4) } }
                : { afterMs: next() * reference.ranMs * 0.8 };
          const result = await run(config, plan);
          totals.runs++;
          if (result.killed) {
            kills++;
            totals.kills++;
            if (atHook) totals.atHook++;
            if (await killedBeforeMetadata(config, job)) totals.metadataMissing++;
            const problems = await checkDurableState(config, job);
            expect(problems, `${scenario.name}: after kill ${kills}`).toEqual([]);
            continue;
          }
          expect(result.code, `${scenario.name}, cycle ${cycle}, attempt ${attempt} failed:\n${result.stderr}`).toBe(0);
          const actual = normalise(await readFile(config.output, 'utf8'), scenario.ordered);
          if (actual !== expected) mismatches.push(`cycle ${cycle} (after ${attempt} kills): ${describeMismatch(actual, expected)}`);
          break;
        }
        await rm(dir, { recursive: true, force: true });
      }
      totals.mismatches += mismatches.length;
      expect(mismatches).toEqual([]);
      if (scenario.config.hook === 'metadata') expect(totals.metadataMissing, 'a kill landed between the state files and _metadata').toBeGreaterThan(0);
    });
  });
});
