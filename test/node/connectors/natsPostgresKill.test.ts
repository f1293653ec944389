import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, bundleFixture, type BundledFixture } from '../../support/childJob';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, userCountMessages, type NatsStreams } from './natsStreams';
import { postgresKillCampaign, preparedTransactionsAllowed, type PostgresCampaignSetup } from './postgresCampaign';
import { testSchema } from './postgresSupport';

// The NATS → PostgreSQL kill campaign, the connector pair of issue #20's bar: a keyed running count of a JetStream
// stream (three subjects as splits, two source subtasks) into postgresSink's appended and upserted tables, killed with
// SIGKILL at random points and restarted until it finishes (see postgresCampaign.ts). The control runs the same job
// with a hand-written sink that INSERTs each batch as it fills, without deduplication: the same kills must then leave
// duplicated rows, or the campaign could not tell.

const RECORDS = 6_000;
const USERS = 300;
const MIN_KILLS = 20;

const natsUp = await serverUp('nats');
const postgresUp = await serverUp('postgres');
const up = natsUp && postgresUp;

describe.skipIf(!up)('NATS → PostgreSQL kill campaign (SIGKILL)', () => {
  const db = testSchema(up);
  let nats: NatsStreams;
  let base = '';
  let bundle: BundledFixture | undefined;
  let stream = '';
  const setup: PostgresCampaignSetup = {
    db,
    base: () => base,
    bundle: () => bundle!,
    input: () => `nats://${NATS}/${stream}`,
    records: RECORDS,
    users: USERS,
    // Enough per-record work that reading and counting, not connecting and restoring, fill most of a run.
    work: 20_000,
    seed: 0x0a75_9e,
    killsPerCycle: 10,
  };
  beforeAll(async () => {
    nats = await natsStreams();
    base = await mkdtemp(join(tmpdir(), 'weir-nats-pg-kill-'));
    bundle = await bundleFixture(join(ROOT, 'test/node/connectors/fixtures/postgresKillJob.ts'));
    stream = await nats.create('weir_pg_kill_in');
    await nats.publish(userCountMessages(stream, RECORDS, USERS));
  }, 120_000);
  afterAll(async () => {
    await nats?.removeAll();
    await rm(base, { recursive: true, force: true });
    await bundle?.remove();
  });

  it(`survives ≥ ${MIN_KILLS} kills with every row written exactly once (write-ahead)`, { timeout: 600_000 }, async () => {
    const { kills, mismatches, completed } = await postgresKillCampaign(setup, { transactions: 'write-ahead', minKills: MIN_KILLS });
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
    expect(completed).toBeGreaterThan(0);
  });

  it(`survives ≥ ${MIN_KILLS} kills with every row written exactly once (prepared: two-phase commit)`, { timeout: 600_000 }, async (context) => {
    if (!(await preparedTransactionsAllowed(db))) return context.skip();
    const { kills, mismatches, completed } = await postgresKillCampaign(setup, { transactions: 'prepared', minKills: MIN_KILLS });
    expect(mismatches).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
    expect(completed).toBeGreaterThan(0);
  });

  it('control: the same kills duplicate rows when the sink does not deduplicate', { timeout: 600_000 }, async () => {
    const { mismatches, completed } = await postgresKillCampaign(setup, { sink: 'at-least-once', minKills: 3 });
    expect(completed).toBeGreaterThan(0);
    expect(mismatches.length).toBeGreaterThan(0);
    expect(mismatches.join('\n')).toMatch(/[1-9]\d* duplicated/);
  });
});
