import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleFixture, killCycles, ROOT, runChild, type BundledFixture, type ChildRun } from '../../support/childJob';
import { random } from '../../support/random';
import { addEntries, deleteRedisKeys, readEntries, REDIS_URL, redisTestClient, redisTestPrefix, type RedisTestClient } from '../../support/redisKeys';
import { serverUp } from '../../support/servers';

const up = await serverUp('redis');

// Redis → Redis under SIGKILL: a keyed count of three streams (splits over two source subtasks), appended to a
// stream by redisStreamSink, killed at random points and restarted with restore 'latest' until it finishes. Each
// output line is one user's running count, so a record lost leaves a line out and a commit replayed repeats lines;
// the subtasks interleave differently in every run, so outputs are compared as sets of lines. Kill points are counted
// in records processed (the fixture's `hook progress` lines), not in time, so that a loaded machine still makes progress.

const PER_STREAM = 4000;
const USERS = 300;
const WORK = 2500;
const MIN_KILLS = 20;
const SEED = 0x7ed_15;
const KILL_WITHIN = 20;

const sortedLines = (output: string) => output.split('\n').filter(Boolean).sort().join('\n');

describe.skipIf(!up)('Redis → Redis kill campaign (SIGKILL)', () => {
  const prefix = redisTestPrefix();
  const inputs = [0, 1, 2].map((k) => `${prefix}in:${k}`);
  let base = '';
  let bundle: BundledFixture | undefined;
  let client: RedisTestClient;
  beforeAll(async () => {
    client = await redisTestClient();
    base = await mkdtemp(join(tmpdir(), 'weir-redis-kill-'));
    bundle = await bundleFixture(join(ROOT, 'test/node/connectors/fixtures/redisJob.ts'));
    for (const [k, stream] of inputs.entries()) await addEntries(client, stream, PER_STREAM, (i) => ({ user: `u${(k * PER_STREAM + i) % USERS}`, n: '1' }));
  }, 120_000);
  afterAll(async () => {
    await deleteRedisKeys(client, prefix);
    await client.close();
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
  });

  /** One run in `dir`: its output stream and progress marker are named after the directory. */
  const run = (dir: string, killAt?: number): Promise<ChildRun> =>
    runChild(bundle!, [REDIS_URL, inputs.join(','), `${prefix}out:${basename(dir)}`, `${prefix}progress:${basename(dir)}`, join(dir, 'checkpoints'), String(WORK)], {
      onHook: killAt === undefined ? undefined : { name: 'progress', skip: killAt },
    });
  /** What a finished run appended, one line per entry, where killCycles reads a run's output. */
  const dumpOutput = async (dir: string) => {
    const lines = (await readEntries(client, `${prefix}out:${basename(dir)}`)).map((e) => `${e.message.line}\n`);
    await writeFile(join(dir, 'out', 'out.jsonl'), lines.join(''));
  };

  it(`survives ≥ ${MIN_KILLS} kills with every record counted once (0 missing, 0 duplicated)`, { timeout: 600_000 }, async () => {
    const clean = join(base, 'clean');
    await mkdir(join(clean, 'out'), { recursive: true });
    const reference = await run(clean);
    expect(reference.code, reference.stderr).toBe(0);
    await dumpOutput(clean);
    const expected = await readFile(join(clean, 'out', 'out.jsonl'), 'utf8');
    const perUser = new Map<string, number>();
    let counted = '';
    for (let k = 0; k < inputs.length; k++) {
      for (let i = 0; i < PER_STREAM; i++) {
        const user = `u${(k * PER_STREAM + i) % USERS}`;
        const n = (perUser.get(user) ?? 0) + 1;
        perUser.set(user, n);
        counted += `{"user":"${user}","n":${n}}\n`;
      }
    }
    expect(sortedLines(expected)).toBe(sortedLines(counted));

    const next = random(SEED);
    const { kills, mismatches } = await killCycles({
      base,
      minKills: MIN_KILLS,
      expected,
      normalize: sortedLines,
      // Killed after 0 to KILL_WITHIN × 400 records of the run: a run from the start processes 30 such steps.
      run: (dir) => run(dir, Math.floor(next() * KILL_WITHIN)),
      afterRun: async (dir, child) => {
        if (!child.killed) await dumpOutput(dir);
      },
    });
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
  });
});
