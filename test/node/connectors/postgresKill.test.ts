import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, bundleFixture, type BundledFixture } from '../../support/childJob';
import { serverUp } from '../../support/servers';
import { postgresKillCampaign, preparedTransactionsAllowed, type PostgresCampaignSetup, type Transactions } from './postgresCampaign';
import { testSchema } from './postgresSupport';

// The kill campaign of the PostgreSQL sink, file → PostgreSQL: a keyed running count read from a file (fromFile)
// into an appended and an upserted table, killed with SIGKILL at random points (see postgresCampaign.ts).

const RECORDS = 20_000;
const USERS = 200;
const MIN_KILLS = 20;

const up = await serverUp('postgres');

describe.skipIf(!up)('kill campaign: fromFile → postgresSink (append and upsert) under SIGKILL', () => {
  const db = testSchema(up);
  let base = '';
  let bundle: BundledFixture | undefined;
  const setup: PostgresCampaignSetup = {
    db,
    base: () => base,
    bundle: () => bundle!,
    input: () => join(base, 'input.jsonl'),
    records: RECORDS,
    users: USERS,
    work: 12_000,
    seed: 0x9057_9e5,
    killsPerCycle: 10,
  };
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

  const campaign = async (transactions: Transactions) => {
    const { kills, mismatches, completed } = await postgresKillCampaign(setup, { transactions, minKills: MIN_KILLS });
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
    expect(completed).toBeGreaterThan(0);
  };

  it(`survives ≥ ${MIN_KILLS} kills with every row written exactly once (write-ahead)`, { timeout: 600_000 }, () => campaign('write-ahead'));

  it(`survives ≥ ${MIN_KILLS} kills with every row written exactly once (prepared: two-phase commit)`, { timeout: 600_000 }, async (context) => {
    if (!(await preparedTransactionsAllowed(db))) return context.skip();
    await campaign('prepared');
  });
});
