import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJob, fold, forEach, JobDefinitionError, keyGroupOf } from 'weir';
import { keyGroupPartitions, natsObjectCheckpointStorage, natsSource, purgeConsumed, runScaleOut } from 'weir/node';
import { bundleFixture, ROOT, type BundledFixture } from '../../support/childJob';
import { childLines, killChildren, type MemberChild } from '../../support/childLines';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, type NatsStreams } from '../connectors/natsStreams';

// README "Beyond one machine", "A keyBy on another key": one define split at a repartition topic, every task running
// its key group's part of both sub-topologies, member processes of their own against the real server.

const up = await serverUp('nats');

// Short, so that a dead member's key groups move on soon; long enough for a loaded 2-core machine to renew in time.
const LEASE = 3000;
const GROUPS = 8;
const SHOPS = 10;
const ITEMS = 12;

type Sale = { shop: string; item: string; amount: number };
/** Sale `i`: shops and items in turn at different paces, so that one shop's sales go to many items' key groups. */
const sale = (i: number): Sale => ({ shop: `s${i % SHOPS}`, item: `i${(i * 7) % ITEMS}`, amount: 1 + (i % 5) });

describe.skipIf(!up)('task.repartition: a keyBy on another key inside one define', () => {
  let fixture: BundledFixture;
  let streams: NatsStreams | undefined;
  const children: MemberChild[] = [];
  let group = '';
  let input = '';
  let output = '';
  let repartitioned = '';
  let bucket = '';

  beforeAll(async () => {
    fixture = await bundleFixture(`${ROOT}/test/node/scaleout/fixtures/scaleOutRepartitionRunner.ts`);
  }, 60_000);
  afterEach(async () => {
    await killChildren(children);
    if (streams === undefined) return;
    for (const name of [`KV_${group}-leases`, `KV_${group}-commits`, `OBJ_${bucket}`, repartitioned]) await streams.jsm.streams.delete(name).catch(() => undefined);
    await streams.removeAll();
    streams = undefined;
  });
  afterAll(async () => {
    await fixture?.remove();
  });

  const setUp = async (name: string) => {
    const id = randomBytes(4).toString('hex');
    group = `weir-test-${name}-${id}`;
    bucket = `weir-test-${name}-chk-${id}`;
    repartitioned = `wrrp_${id}`;
    streams = await natsStreams();
    input = await streams.create('wrin');
    output = await streams.create('wrout');
    return streams;
  };
  const start = (name: string): MemberChild => {
    const child = spawn(process.execPath, [fixture.file, NATS, group, name, String(GROUPS), String(LEASE), input, output, repartitioned, bucket], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const { lines, waitFor } = childLines(child);
    const handle: MemberChild = { name, process: child, lines, waitFor, exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
    children.push(handle);
    return handle;
  };
  /** Publishes sales `from` … `to - 1`, each to its shop's key group's partition. */
  const produce = async (nats: NatsStreams, from: number, to: number) => {
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    await nats.publish(Array.from({ length: to - from }, (_, i) => [partitions.subjectOfKey(sale(from + i).shop), JSON.stringify(sale(from + i))] as const));
  };
  /** Waits until the output stream holds `count` totals; fails after 150 s with what each member printed last. */
  const waitForOutput = async (nats: NatsStreams, count: number, members: MemberChild[]) => {
    const deadline = Date.now() + 150_000;
    for (;;) {
      const held = (await nats.jsm.streams.info(output)).state.messages;
      if (held >= count) return;
      if (Date.now() > deadline) throw new Error(`${held} of ${count} totals after 150 s; ${members.map((m) => `${m.name}: ${m.lines.slice(-6).join(' | ')}`).join('; ')}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  it('publishes what one process would, by shop then by item, through a member SIGKILLed and restarted mid-run; purgeConsumed then empties the topic', { timeout: 420_000 }, async () => {
    const nats = await setUp('rekey');
    const RECORDS = 1200;
    await produce(nats, 0, RECORDS / 2);
    const a = start('m-a');
    let b = start('m-b');
    await waitForOutput(nats, RECORDS / 8, [a, b]);
    // b dies mid-run: a takes its key groups once the lease ran out, each restored from b's last commit, which holds
    // both parts' offsets (the shops' partition and the item topic's) and both parts' state.
    b.process.kill('SIGKILL');
    await b.exited;
    await produce(nats, RECORDS / 2, RECORDS);
    await waitForOutput(nats, RECORDS / 2, [a]);
    b = start('m-b');
    await b.waitFor((line) => line.startsWith('start '));
    await waitForOutput(nats, RECORDS, [a, b]);
    for (const member of [a, b]) member.process.kill('SIGTERM');
    expect(await a.exited, a.lines.join('\n')).toBe(0);
    expect(await b.exited, b.lines.join('\n')).toBe(0);

    // What one process gives: each item's totals counted 1…c once each, ending at its sum; each shop's sales numbered
    // 1…c once each (the first sub-topology's state) and each carried over the topic once.
    const totals = (await nats.contents(output)).map((message) => JSON.parse(message.data) as { item: string; n: number; total: number; shop: string; shopN: number });
    const expectedItems = new Map<string, { count: number; sum: number }>();
    const expectedShops = new Map<string, number>();
    for (let i = 0; i < RECORDS; i++) {
      const { item, shop, amount } = sale(i);
      const seen = expectedItems.get(item) ?? { count: 0, sum: 0 };
      expectedItems.set(item, { count: seen.count + 1, sum: seen.sum + amount });
      expectedShops.set(shop, (expectedShops.get(shop) ?? 0) + 1);
    }
    expect(totals.length).toBe(RECORDS);
    for (const [item, { count, sum }] of expectedItems) {
      const mine = totals.filter((total) => total.item === item);
      expect(mine.map((total) => total.n).sort((x, y) => x - y), item).toEqual(Array.from({ length: count }, (_, n) => n + 1));
      expect(mine.find((total) => total.n === count)?.total, item).toBe(sum);
    }
    for (const [shop, count] of expectedShops) {
      const numbers = totals.filter((total) => total.shop === shop).map((total) => total.shopN);
      expect(numbers.sort((x, y) => x - y), shop).toEqual(Array.from({ length: count }, (_, n) => n + 1));
    }
    // The runner made the topic's stream, with the default duplicate window.
    const { config, state } = await nats.jsm.streams.info(repartitioned);
    expect(config.subjects).toEqual([`${repartitioned}.>`]);
    expect(config.duplicate_window).toBe(120_000 * 1_000_000);
    expect(state.messages).toBeGreaterThan(0);
    // Every total was published, so every key group committed past all of the topic: purgeConsumed removes it all.
    // The items' key groups are the topic's subjects that hold messages; the others (0 and 7 here) never get any, and
    // whether a commit names an offset for them (0: a pull came back empty) or none yet (null) depends on timing.
    const withMessages = [...new Set(Array.from({ length: ITEMS }, (_, i) => `${repartitioned}.by-item.${keyGroupOf(`i${i}`, GROUPS)}`))].sort();
    const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    try {
      const purged = await purgeConsumed({ servers: NATS, stream: repartitioned, group, source: 'by-item', storage });
      expect(purged.filter((subject) => subject.purged > 0).map((subject) => subject.subject).sort()).toEqual(withMessages);
      expect((await nats.jsm.streams.info(repartitioned)).state.messages).toBe(0);
    } finally {
      await storage.close();
    }
  });

  it('rejects a repartition whose topic another stream captures, a flow of another job and a bad stream name with JobDefinitionError', { timeout: 120_000 }, async () => {
    const nats = await setUp('rekey-bad');
    const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    const sales = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    // Another stream holds the topic's subjects.
    const squatter = `${repartitioned}_other`;
    await nats.jsm.streams.add({ name: squatter, subjects: [`${repartitioned}.>`] });
    try {
      const captured = await runScaleOut(
        (task) => {
          const job = task.createJob();
          const read = job.source(natsSource<Sale>({ servers: NATS, stream: input, subjects: sales.subjects([task.keyGroup]), bounded: false }), { uid: 'sales' });
          task.repartition(read, { stream: repartitioned, topic: 'by-item', key: (s) => s.item }).pipe(fold(0, (n) => n + 1, { uid: 'count' }), forEach(() => undefined, { uid: 'drop' }));
          return job;
        },
        { servers: NATS, group, member: 'here', maxParallelism: GROUPS, lease: LEASE, storage },
      );
      await expect(captured.done).rejects.toThrow(JobDefinitionError);
      await expect(captured.done).rejects.toThrow(`repartition ${repartitioned}.by-item: its subject '${repartitioned}.by-item.0' belongs to stream '${squatter}', not '${repartitioned}'`);
      const other = await runScaleOut(
        (task) => {
          const job = task.createJob();
          const elsewhere = createJob({ name: 'elsewhere' }).source(natsSource<Sale>({ servers: NATS, stream: input, bounded: false }), { uid: 'x' });
          task.repartition(elsewhere, { stream: repartitioned, topic: 't', key: (s) => s.item });
          return job;
        },
        { servers: NATS, group: `${group}-b`, member: 'here', maxParallelism: GROUPS, lease: LEASE, storage },
      );
      await expect(other.done).rejects.toThrow(/the flow must belong to the job task\.createJob\(\) made/);
      const misnamed = await runScaleOut(
        (task) => {
          const job = task.createJob();
          const read = job.source(natsSource<Sale>({ servers: NATS, stream: input, subjects: sales.subjects([task.keyGroup]), bounded: false }), { uid: 'sales' });
          task.repartition(read, { stream: 'not.a.stream', topic: 't', key: (s) => s.item });
          return job;
        },
        { servers: NATS, group: `${group}-c`, member: 'here', maxParallelism: GROUPS, lease: LEASE, storage },
      );
      await expect(misnamed.done).rejects.toThrow(/repartition not\.a\.stream\.t: stream must be a JetStream stream name/);
    } finally {
      await storage.close();
      for (const name of [`KV_${group}-b-leases`, `KV_${group}-b-commits`, `KV_${group}-c-leases`, `KV_${group}-c-commits`, squatter]) await nats.jsm.streams.delete(name).catch(() => undefined);
    }
  });
});
