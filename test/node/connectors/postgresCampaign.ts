// The PostgreSQL kill campaigns' shared part (postgresKill.test.ts reads a file, natsPostgresKill.test.ts a NATS
// stream): the job of fixtures/postgresKillJob.ts, a keyed running count written to two tables (every count appended
// to one, each user's latest upserted into the other), is killed with SIGKILL at random points and restarted with
// restore 'latest' until it finishes. Each cycle writes tables of its own; once it finished, both tables must hold
// exactly the rows of a failure-free run: an appended count lost is missing from the first table, one written twice is
// duplicated there. Both tables are compared as sorted lines, so the order in which subtasks interleave plays no part.
import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { expect } from 'vitest';
import { killCycles, runChild, type BundledFixture, type KillCycles } from '../../support/childJob';
import { random } from '../../support/random';
import { POSTGRES_URL, type testSchema } from './postgresSupport';

export type Transactions = 'write-ahead' | 'prepared';

export interface PostgresCampaignSetup {
  db: ReturnType<typeof testSchema>;
  /** The campaign's scratch directory, the bundled fixture and its input (a file or `nats://server/stream`). */
  base: () => string;
  bundle: () => BundledFixture;
  input: () => string;
  /** Records in the input; record `i` is `{ user: 'u<i % users>', n: 1 }`. */
  records: number;
  users: number;
  /** The fixture's busy work per record. */
  work: number;
  seed: number;
  /**
   * Kills per cycle before a run is let finish: on a loaded machine a restart (connect, restore) can outlast a kill
   * delay scaled on the failure-free run, and a cycle would then never end. Unlimited by default.
   */
  killsPerCycle?: number;
}

export interface CampaignRun {
  /** `at-least-once`: the fixture's sink without deduplication, the control that must show duplicates. */
  sink?: 'exactly-once' | 'at-least-once';
  transactions?: Transactions;
  minKills: number;
}

/** Both tables' expected lines: user `u` counted 1, 2, …, its number of records, and its total. */
export function expectedTables(records: number, users: number): string {
  const lines: string[] = [];
  for (let u = 0; u < users; u++) {
    const count = Math.floor(records / users) + (u < records % users ? 1 : 0);
    for (let n = 1; n <= count; n++) lines.push(`count u${u} ${n}`);
    lines.push(`total u${u} ${count}`);
  }
  return lines.sort().join('\n');
}

/**
 * Runs a failure-free reference run (whose tables must be `expectedTables`), then kill cycles until `minKills` kills
 * landed; returns what `killCycles` saw.
 */
export async function postgresKillCampaign(setup: PostgresCampaignSetup, { sink = 'exactly-once', transactions = 'write-ahead', minKills }: CampaignRun): Promise<KillCycles> {
  const { db } = setup;
  const suffixOf = (dir: string) => relative(setup.base(), dir).replace(/[^a-z0-9]/g, '_');
  /** Both tables as sorted lines: `count <user> <n>` per appended row, `total <user> <n>` per upserted one. */
  const dump = async (suffix: string): Promise<string> => {
    const counts = await db.rows<{ user: string; n: number }>(`SELECT "user", n FROM ${db.schema}.counts_${suffix}`);
    const totals = await db.rows<{ user: string; n: number }>(`SELECT "user", n FROM ${db.schema}.totals_${suffix}`);
    return [...counts.map((r) => `count ${r.user} ${r.n}`), ...totals.map((r) => `total ${r.user} ${r.n}`)].sort().join('\n');
  };
  const attempts = new Map<string, number>();
  /** One run in `dir`, whose tables are created on its first run. */
  const run = async (dir: string, killAfter?: number) => {
    const suffix = suffixOf(dir);
    await db.sql(`CREATE TABLE IF NOT EXISTS ${db.schema}.counts_${suffix} ("user" text NOT NULL, n int NOT NULL)`);
    await db.sql(`CREATE TABLE IF NOT EXISTS ${db.schema}.totals_${suffix} ("user" text PRIMARY KEY, n int NOT NULL)`);
    const attempt = attempts.get(dir) ?? 0;
    attempts.set(dir, attempt + 1);
    const args = [setup.input(), POSTGRES_URL, db.schema, suffix, join(dir, 'checkpoints'), String(setup.work)];
    const afterMs = attempt < (setup.killsPerCycle ?? Infinity) ? killAfter : undefined;
    return runChild(setup.bundle(), args, { afterMs }, { WEIR_PG_TRANSACTIONS: transactions, WEIR_PG_SINK: sink });
  };

  const expected = expectedTables(setup.records, setup.users);
  const clean = join(setup.base(), `clean-${sink}-${transactions}`);
  await mkdir(clean, { recursive: true });
  const reference = await run(clean);
  expect(reference.code, reference.stderr).toBe(0);
  expect(await dump(suffixOf(clean))).toBe(expected);

  const next = random(setup.seed);
  return killCycles({
    base: join(setup.base(), `${sink}-${transactions}`),
    minKills,
    expected,
    run: (dir) => run(dir, next() * reference.ranMs * 0.8),
    // killCycles compares `out/out.jsonl`: the finished run's tables, dumped there.
    afterRun: async (dir, child) => {
      if (!child.killed && child.code === 0) await writeFile(join(dir, 'out', 'out.jsonl'), await dump(suffixOf(dir)));
    },
  });
}

/** Whether the server allows two-phase commit; says loudly when it does not, for the test to skip. */
export async function preparedTransactionsAllowed(db: ReturnType<typeof testSchema>): Promise<boolean> {
  const [setting] = await db.rows<{ max_prepared_transactions: string }>('SHOW max_prepared_transactions');
  if (Number(setting!.max_prepared_transactions) > 0) return true;
  console.warn('!! two-phase kill campaign not run: this server has max_prepared_transactions = 0');
  return false;
}
