import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectorError, forEach } from 'weir';
import { joinScaleOut, keyGroupPartitions, natsObjectCheckpointStorage, natsSource, runScaleOut, type RunScaleOutOptions, type ScaleOutTask, type ScaleOutTaskEvent } from 'weir/node';
import { serverUp } from '../../support/servers';
import { tcpProxy, type TcpProxy } from '../../support/tcpProxy';
import { NATS, natsStreams, type NatsStreams } from '../connectors/natsStreams';

const up = await serverUp('nats');

const GROUPS = 4;
// Longer than the outages below, so that no member is fenced for not renewing through them.
const LEASE = 20_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds; fails after 60 s with `what`. */
async function until(what: () => string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not after 60 s: ${what()}`);
    await pause(100);
  }
}

describe.skipIf(!up)('scale-out runner recovery: a server away as it joins or starts a task, and former owners\' directories', () => {
  let streams: NatsStreams | undefined;
  let proxy: TcpProxy | undefined;
  let group = '';
  let bucket = '';
  let input = '';

  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
    if (streams === undefined) return;
    for (const name of [`KV_${group}-leases`, `KV_${group}-commits`, `OBJ_${bucket}`]) await streams.jsm.streams.delete(name).catch(() => undefined);
    await streams.removeAll();
    streams = undefined;
  });

  const setUp = async (name: string) => {
    const id = randomBytes(4).toString('hex');
    group = `weir-test-${name}-${id}`;
    bucket = `weir-test-${name}-chk-${id}`;
    streams = await natsStreams();
    input = await streams.create('wrrec');
    proxy = await tcpProxy(Number(NATS.split(':')[1]));
    return { storage: natsObjectCheckpointStorage({ servers: NATS, bucket }), throughProxy: `127.0.0.1:${proxy.port}` };
  };
  /** A task that reads its partition (straight from the server) and drops what it reads. */
  const reading = (task: ScaleOutTask) => {
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    const job = task.createJob();
    job
      .source(natsSource({ servers: NATS, stream: input, subjects: partitions.subjects([task.keyGroup]), bounded: false }), { uid: 'in' })
      .pipe(forEach(() => undefined, { uid: 'drop' }));
    return job;
  };
  const options = (storage: RunScaleOutOptions['storage'], servers: string, events: ScaleOutTaskEvent[]): RunScaleOutOptions => ({
    servers,
    group,
    member: 'here',
    maxParallelism: GROUPS,
    lease: LEASE,
    storage,
    onTask: (event) => events.push(event),
  });
  const started = (events: ScaleOutTaskEvent[]) => events.filter((event) => event.type === 'start').length;

  it('joins once the server answers, retrying with backoff and reporting each retry', { timeout: 120_000 }, async () => {
    const { storage, throughProxy } = await setUp('joinretry');
    await proxy!.down();
    const events: ScaleOutTaskEvent[] = [];
    const joining = runScaleOut(reading, options(storage, throughProxy, events));
    await until(() => 'no retry reported', () => events.some((event) => event.type === 'retry'));
    await proxy!.up();
    const runner = await joining;
    try {
      await until(() => `${started(events)} tasks started`, () => started(events) === GROUPS);
      const retries = events.filter((event) => event.type === 'retry');
      expect(retries[0]).toMatchObject({ type: 'retry', attempt: 1, delayMs: 100 });
      // The join's retries name no key group.
      for (const retry of retries) expect(retry).not.toHaveProperty('keyGroup');
      await runner.leave();
      await expect(runner.done).resolves.toBeUndefined();
    } finally {
      await runner.leave();
      await storage.close();
    }
  });

  it('fails with ConnectorError naming taskTimeout when the server stays away past it', { timeout: 120_000 }, async () => {
    const { storage, throughProxy } = await setUp('joinfail');
    await proxy!.down();
    const events: ScaleOutTaskEvent[] = [];
    try {
      const joining = runScaleOut(reading, { ...options(storage, throughProxy, events), taskTimeout: 1500 });
      await expect(joining).rejects.toThrow(ConnectorError);
      await expect(joining).rejects.toThrow(/scale-out runner of group 'weir-test-joinfail-\w+': joining: the server did not answer for 1500 ms \(\d+ attempts, .*give a longer taskTimeout/);
      expect(events.filter((event) => event.type === 'retry').length).toBeGreaterThan(1);
    } finally {
      await storage.close();
    }
  });

  it('retries a task whose start meets the server away, and runs it once the server answers', { timeout: 180_000 }, async () => {
    const { storage, throughProxy } = await setUp('startretry');
    const events: ScaleOutTaskEvent[] = [];
    let cut = false;
    const runner = await runScaleOut(
      (task) => {
        // As the first task starts, the member's connection goes away for 7 s: the next task's start cannot read its
        // committed checkpoint (the request times out) until it is back.
        if (!cut) {
          cut = true;
          void proxy!.down().then(() => pause(7000)).then(() => proxy!.up());
        }
        return reading(task);
      },
      // Checkpoints far apart, so that the commits refused during the outage do not outnumber the tolerated failures.
      { ...options(storage, throughProxy, events), checkpointInterval: 5000 },
    );
    try {
      await until(() => `${started(events)} tasks started; events ${JSON.stringify(events)}`, () => started(events) === GROUPS);
      const retries = events.filter((event) => event.type === 'retry');
      expect(retries.length).toBeGreaterThan(0);
      for (const retry of retries) expect(retry).toHaveProperty('keyGroup');
      expect(events.filter((event) => event.type === 'end')).toEqual([]);
      expect(runner.running()).toEqual(Array.from({ length: GROUPS }, (_, kg) => kg));
      await runner.leave();
      await expect(runner.done).resolves.toBeUndefined();
    } finally {
      await runner.leave();
      await storage.close();
    }
  });

  it('removes the directories of a former owner that never committed once the new owner committed', { timeout: 120_000 }, async () => {
    const { storage } = await setUp('epochs');
    // An owner that claimed every key group and wrote into its epoch's directories, but never committed (as a fenced
    // member's checkpoints are refused), then went away.
    const former = await joinScaleOut({ servers: NATS, group, member: 'former', maxParallelism: GROUPS, lease: LEASE });
    const formerTokens = new Map(former.owned().map((kg) => [kg, former.token(kg)!]));
    expect(formerTokens.size).toBe(GROUPS);
    for (const [kg, token] of formerTokens) await storage.write(`${group}/kg-${kg}/t${token}/${group}-kg${kg}/chk-1/never-committed`, new TextEncoder().encode('x'));
    await former.leave();
    const events: ScaleOutTaskEvent[] = [];
    const runner = await runScaleOut(reading, { ...options(storage, NATS, events), checkpointInterval: 300 });
    try {
      await until(() => `${started(events)} tasks started`, () => started(events) === GROUPS);
      const tokens = new Map(events.flatMap((event) => (event.type === 'start' ? [[event.keyGroup, event.token] as const] : [])));
      for (const [kg, token] of tokens) {
        expect(token).toBeGreaterThan(formerTokens.get(kg)!);
        // Only the new owner's epoch is left, with its committed checkpoints.
        let left: string[] = [];
        await until(
          () => `key group ${kg} holds ${left.join(', ')}`,
          async () => (left = await storage.list(`${group}/kg-${kg}`)).join() === `t${token}`,
        );
        const committed = (await runner.member.committed(kg)) as { checkpoint: string };
        expect(committed.checkpoint.startsWith(`${group}/kg-${kg}/t${token}/`)).toBe(true);
      }
      await runner.leave();
      await expect(runner.done).resolves.toBeUndefined();
    } finally {
      await runner.leave();
      await storage.close();
    }
  });
});
