import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, bundleFixture, killCycles, runChild, type BundledFixture } from '../../support/childJob';
import { random } from '../../support/random';
import { serverUp } from '../../support/servers';
import { POSTGRES_URL, testSchema } from './postgresSupport';

// The kill campaign of the PostgreSQL sink: a keyed running count read from a file (fromFile) and written to two
// tables, one appending every count and one upserting each user's latest, in a child process killed with SIGKILL at
// random points and restarted with restore 'latest' until it finishes. Each cycle writes tables of its own; once it
// finished, both tables must hold exactly the rows of a failure-free run: an appended count lost is missing from the
// first table, one written twice is duplicated there.

const RECORDS = 20_000;
const USERS = 200;
const WORK = 12_000;
const MIN_KILLS = 20;
const SEED = 0x9057_9e5;

const up = await serverUp('postgres');

type Transactions = 'write-ahead' | 'prepared';

describe.skipIf(!up)('kill campaign: fromFile → postgresSink (append and upsert) under SIGKILL', () => {
  const db = testSchema(up);
  let base = '';
  let bundle: BundledFixture | undefined;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'weir-pg-kill-'));
    bundle = await bundleFixture(join(ROOT, 'test/node/connectors/fixtures/postgresKillJob.ts'));
    let input = '';
    for (let i = 0; i < RECORDS; i++) input += `{"user":"u${i % USERS}","n":1}\n`;
    await writeFile(join(base, 'input.jsonl'), input);
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
  });

  /** The tables of the cycle in `dir`, created on its first run. */
  const suffixOf = (dir: string) => relative(base, dir).replace(/[^a-z0-9]/g, '_');
  const createTables = async (suffix: string) => {
    await db.sql(`CREATE TABLE IF NOT EXISTS ${db.schema}.counts_${suffix} ("user" text NOT NULL, n int NOT NULL)`);
    await db.sql(`CREATE TABLE IF NOT EXISTS ${db.schema}.totals_${suffix} ("user" text PRIMARY KEY, n int NOT NULL)`);
  };
  /** Both tables as sorted lines: `count <user> <n>` per appended row, `total <user> <n>` per upserted one. */
  const dump = async (suffix: string): Promise<string> => {
    const counts = await db.rows<{ user: string; n: number }>(`SELECT "user", n FROM ${db.schema}.counts_${suffix}`);
    const totals = await db.rows<{ user: string; n: number }>(`SELECT "user", n FROM ${db.schema}.totals_${suffix}`);
    return [...counts.map((r) => `count ${r.user} ${r.n}`), ...totals.map((r) => `total ${r.user} ${r.n}`)].sort().join('\n');
  };
  const run = async (dir: string, transactions: Transactions, killAfter?: number) => {
    const suffix = suffixOf(dir);
    await createTables(suffix);
    const args = [join(base, 'input.jsonl'), POSTGRES_URL, db.schema, suffix, join(dir, 'checkpoints'), String(WORK)];
    return runChild(bundle!, args, { afterMs: killAfter }, { WEIR_PG_TRANSACTIONS: transactions });
  };

  const campaign = async (transactions: Transactions) => {
    const expectedLines: string[] = [];
    for (let u = 0; u < USERS; u++) {
      const count = Math.floor(RECORDS / USERS) + (u < RECORDS % USERS ? 1 : 0);
      for (let n = 1; n <= count; n++) expectedLines.push(`count u${u} ${n}`);
      expectedLines.push(`total u${u} ${count}`);
    }
    const expected = expectedLines.sort().join('\n');

    const clean = join(base, `clean-${transactions}`);
    await mkdir(clean, { recursive: true });
    const reference = await run(clean, transactions);
    expect(reference.code, reference.stderr).toBe(0);
    expect(await dump(suffixOf(clean))).toBe(expected);

    const next = random(SEED);
    const { kills, mismatches, completed } = await killCycles({
      base: join(base, transactions),
      minKills: MIN_KILLS,
      expected,
      run: (dir) => run(dir, transactions, next() * reference.ranMs * 0.8),
      // killCycles compares `out/out.jsonl`: the finished run's tables, dumped there.
      afterRun: async (dir, child) => {
        if (!child.killed && child.code === 0) await writeFile(join(dir, 'out', 'out.jsonl'), await dump(suffixOf(dir)));
      },
    });
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
    expect(completed).toBeGreaterThan(0);
  };

  it(`survives ≥ ${MIN_KILLS} kills with every row written exactly once (write-ahead)`, { timeout: 600_000 }, () => campaign('write-ahead'));

  it(`survives ≥ ${MIN_KILLS} kills with every row written exactly once (prepared: two-phase commit)`, { timeout: 600_000 }, async (context) => {
    const [setting] = await db.rows<{ max_prepared_transactions: string }>('SHOW max_prepared_transactions');
    if (Number(setting!.max_prepared_transactions) === 0) {
      console.warn('!! two-phase kill campaign not run: this server has max_prepared_transactions = 0');
      return context.skip();
    }
    await campaign('prepared');
  });
});
