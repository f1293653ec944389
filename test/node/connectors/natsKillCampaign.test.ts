import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, bundleFixture, killCycles, runChild, type BundledFixture, type ChildRun } from '../../support/childJob';
import { random } from '../../support/random';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, userCountMessages, type NatsStreams } from './natsStreams';

// The NATS → NATS kill campaign: a keyed running count of a JetStream stream (three subjects as splits, two source
// subtasks), published to another stream by the exactly-once NATS sink, run in a child process killed with SIGKILL at
// random moments and restarted with `restore: 'latest'` until it finishes. Each cycle writes to a stream of its own,
// whose messages must then be those of a failure-free run: each `{ user, n }` is one user's running count, so a record
// lost leaves a message out and a record counted or published twice repeats one. The subtasks interleave differently
// in every run, so messages are compared as a sorted multiset.

const up = await serverUp('nats');

const RECORDS = 6_000;
const USERS = 300;
// Enough per-record work that reading and counting, not connecting and restoring, fill most of a run.
const WORK = 20_000;
const MIN_KILLS = 20;
// Kills per cycle before a run is let finish: on a loaded machine a restart (connect, restore, create the consumers)
// can outlast a kill delay scaled on the failure-free run, and a cycle would then never end.
const KILLS_PER_CYCLE = 10;
const SEED = 0x0a75_c1;
// Longer than any cycle lasts, so that every replay of a commit falls within the duplicate window.
const DUPLICATE_WINDOW_NS = 15 * 60 * 1e9;

const sortedLines = (output: string) => output.split('\n').filter(Boolean).sort().join('\n');

describe.skipIf(!up)('NATS → NATS kill campaign (SIGKILL)', () => {
  let nats: NatsStreams;
  let base = '';
  let bundle: BundledFixture | undefined;
  let input = '';
  // The output stream of each run directory, created on its first run.
  const outputs = new Map<string, string>();

  beforeAll(async () => {
    nats = await natsStreams();
    base = await mkdtemp(join(tmpdir(), 'weir-nats-kill-'));
    bundle = await bundleFixture(join(ROOT, 'test/faults/fixtures/natsJob.ts'));
    input = await nats.create('weir_kill_in');
    await nats.publish(userCountMessages(input, RECORDS, USERS));
  }, 120_000);
  afterAll(async () => {
    await nats?.removeAll();
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
  });

  const outputOf = async (dir: string): Promise<string> => {
    let stream = outputs.get(dir);
    if (stream === undefined) {
      stream = await nats.create(`weir_kill_${basename(dir).replace(/\W/g, '_')}`, { duplicate_window: DUPLICATE_WINDOW_NS });
      outputs.set(dir, stream);
    }
    return stream;
  };
  const run = async (dir: string, killAfter?: number): Promise<ChildRun> => {
    const output = await outputOf(dir);
    return runChild(bundle!, [NATS, input, `${output}.counts`, join(dir, 'checkpoints'), String(WORK)], { afterMs: killAfter });
  };
  /** Writes what a finished run's output stream holds to `<dir>/out/out.jsonl`, where `killCycles` compares it. */
  const dump = async (dir: string, child: ChildRun): Promise<void> => {
    if (child.killed || child.code !== 0) return;
    const messages = await nats.contents(await outputOf(dir));
    await writeFile(join(dir, 'out', 'out.jsonl'), messages.map((m) => `${m.data}\n`).join(''));
  };

  it(`survives ≥ ${MIN_KILLS} kills with every record counted and published once`, { timeout: 600_000 }, async () => {
    const clean = join(base, 'clean');
    await mkdir(join(clean, 'out'), { recursive: true });
    const reference = await run(clean);
    expect(reference.code, reference.stderr).toBe(0);
    await dump(clean, reference);
    const expected = (await nats.contents(await outputOf(clean))).map((m) => `${m.data}\n`).join('');
    let counted = '';
    for (let i = 0; i < RECORDS; i++) counted += `{"user":"u${i % USERS}","n":${Math.floor(i / USERS) + 1}}\n`;
    expect(sortedLines(expected)).toBe(sortedLines(counted));

    const next = random(SEED);
    const runs = new Map<string, number>();
    const { kills, mismatches } = await killCycles({
      base,
      minKills: MIN_KILLS,
      expected,
      normalize: sortedLines,
      run: (dir) => {
        const attempt = runs.get(dir) ?? 0;
        runs.set(dir, attempt + 1);
        return run(dir, attempt < KILLS_PER_CYCLE ? next() * reference.ranMs * 0.8 : undefined);
      },
      afterRun: dump,
    });
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
  });
});
