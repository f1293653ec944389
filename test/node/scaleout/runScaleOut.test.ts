import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJob, fold, forEach, JobDefinitionError, keyGroupOf, PartitionMismatchError } from 'weir';
import { keyGroupPartitions, natsObjectCheckpointStorage, natsSource, runScaleOut, type ScaleOutTask } from 'weir/node';
import { bundleFixture, ROOT, type BundledFixture } from '../../support/childJob';
import { childLines, killChildren, type MemberChild } from '../../support/childLines';
import { serverUp } from '../../support/servers';
import { random } from '../../support/random';
import { NATS, natsStreams, type NatsStreams } from '../connectors/natsStreams';
import { NATS_SERVER_BINARY, privateNatsServer, type PrivateNatsServer } from '../../support/privateNatsServer';
import { POSTGRES_URL, testSchema } from '../connectors/postgresSupport';

const up = await serverUp('nats');
const postgresUp = up && (await serverUp('postgres'));

// Short, so that a dead member's key groups move on soon; long enough for a loaded 2-core machine to renew in time.
const LEASE = 3000;
const GROUPS = 8;
const USERS = 40;

describe.skipIf(!up)('runScaleOut: one task per owned key group, in member processes of their own', () => {
  let fixture: BundledFixture;
  let streams: NatsStreams;
  // Whether this test connected `streams` (a test that failed before would leave it closed).
  let streamsOpen = false;
  const children: MemberChild[] = [];
  let group = '';
  let input = '';
  let output = '';
  let bucket = '';
  let servers = NATS;
  let server: PrivateNatsServer | undefined;
  // The members' sink: NATS (`output`) unless a test points them at a PostgreSQL table.
  let sinkArgs: string[] = [];
  const db = testSchema(postgresUp);
  // Members started again whenever they exit unasked for (fenced because the loaded machine kept them from renewing
  // in time, or failed in an outage), as an operator's supervisor would; `planned` exits are the test's own doing.
  let supervision = { members: new Map<string, MemberChild>(), planned: new Set<MemberChild>(), unplanned: 0, finishing: false };

  beforeAll(async () => {
    fixture = await bundleFixture(`${ROOT}/test/node/scaleout/fixtures/scaleOutRunner.ts`);
  }, 60_000);
  afterEach(async () => {
    // A failed test's members are not started again as they are killed here (they ran on, orphaned, after the test).
    supervision.finishing = true;
    await killChildren(children);
    if (!streamsOpen) return;
    streamsOpen = false;
    for (const name of [`KV_${group}-leases`, `KV_${group}-commits`, `OBJ_${bucket}`]) await streams.jsm.streams.delete(name).catch(() => undefined);
    // Its streams, and its connection.
    await streams.removeAll();
    await server?.remove();
    server = undefined;
  });
  afterAll(async () => {
    await fixture?.remove();
  });

  const setUp = async (name: string, on = NATS) => {
    servers = on;
    supervision = { members: new Map(), planned: new Set(), unplanned: 0, finishing: false };
    sinkArgs = [];
    const id = randomBytes(4).toString('hex');
    group = `weir-test-${name}-${id}`;
    bucket = `weir-test-${name}-chk-${id}`;
    // A private server may still be starting.
    for (let attempt = 0; ; attempt++) {
      const connected = await natsStreams(servers).catch((error: unknown) => {
        if (attempt >= 50) throw error;
        return undefined;
      });
      if (connected) {
        streams = connected;
        streamsOpen = true;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    input = await streams.create('wrin');
    output = await streams.create('wrout');
  };
  const start = (name: string): MemberChild => {
    const child = spawn(process.execPath, [fixture.file, servers, group, name, String(GROUPS), String(LEASE), input, output, bucket, ...sinkArgs], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const { lines, waitFor } = childLines(child);
    // On 'close', not 'exit': by then its stdout is read to the end, so its last line (`left`, `fenced …`) is in `lines`.
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const handle: MemberChild = {
      name,
      process: child,
      lines,
      waitFor,
      exited,
    };
    children.push(handle);
    return handle;
  };
  /**
   * Publishes records `from` … `to - 1` (user `u<i % USERS>`), each to its user's key group's partition, up to 7 per
   * message (the `Weir-Batch` format of `toNats({ batch })`). A key group's backlog stays below a read (1,024 records),
   * so reads end at message ends here: offsets in the middle of a message are natsBatch.test.ts's concern.
   */
  const produce = async (from: number, to: number) => {
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    const perSubject = new Map<string, string[]>();
    for (let i = from; i < to; i++) {
      const user = `u${i % USERS}`;
      const subject = partitions.subjectOfKey(user);
      perSubject.set(subject, [...(perSubject.get(subject) ?? []), JSON.stringify({ user })]);
    }
    const messages: [string, string[]][] = [];
    for (const [subject, payloads] of perSubject) for (let k = 0; k < payloads.length; k += 7) messages.push([subject, payloads.slice(k, k + 7)]);
    await streams.publishBatches(messages);
  };
  /** How many messages the output stream holds. */
  const published = async () => (await streams.jsm.streams.info(output)).state.messages;
  /** Waits until the members published `count` counts; fails after 100 s with what each member printed last. */
  const waitForOutput = async (count: number, written = published) => {
    const deadline = Date.now() + 100_000;
    while ((await written()) < count) {
      if (Date.now() > deadline) throw new Error(`${await written()} of ${count} counts written after 100 s; ${membersSay()}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  /** The last lines each member printed (the supervised ones' latest processes, or every one started), for a failure's message. */
  const membersSay = () =>
    [...(supervision.members.size > 0 ? supervision.members.values() : children)].map((child) => `${child.name}: ${child.lines.slice(-6).join(' | ')}`).join('; ') +
    `; ${supervision.unplanned} unplanned restarts`;
  /**
   * What one process running the same job publishes for `records` records: every user's counts 1…c, each once, in
   * order per user (a user's records are one partition's, read in order).
   */
  const oneProcessRun = (records: number) => {
    const expected = new Map<string, number[]>();
    for (let i = 0; i < records; i++) {
      const user = `u${i % USERS}`;
      const counts = expected.get(user) ?? [];
      counts.push(counts.length + 1);
      expected.set(user, counts);
    }
    return expected;
  };
  const outputPerUser = async () => {
    const got = new Map<string, number[]>();
    for (const message of await streams.contents(output)) {
      const { user, n } = JSON.parse(message.data) as { user: string; n: number };
      got.set(user, [...(got.get(user) ?? []), n]);
    }
    return got;
  };
  const supervise = (name: string): MemberChild => {
    const child = start(name);
    supervision.members.set(name, child);
    void child.exited.then(() => {
      if (supervision.planned.has(child) || supervision.members.get(name) !== child || supervision.finishing) return;
      supervision.unplanned++;
      supervise(name);
    });
    return child;
  };
  /** Every supervised member leaves cleanly (SIGTERM); resolves with their exit codes. */
  const finish = async () => {
    supervision.finishing = true;
    const all = [...supervision.members.values()];
    for (const child of all) child.process.kill('SIGTERM');
    // A member that does not leave within 90 s of its SIGTERM is a failure: say which, and what it printed last.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const staying = all.filter((child) => child.process.exitCode === null && child.process.signalCode === null);
        reject(new Error(`${staying.map((child) => `${child.name}: ${child.lines.slice(-4).join(' | ')}`).join('; ')} did not leave within 90 s of SIGTERM`));
      }, 90_000);
    });
    try {
      return await Promise.race([Promise.all(all.map((child) => child.exited)), late]);
    } finally {
      clearTimeout(timer);
    }
  };
  const sorted = (map: Map<string, number[]>) => [...map.entries()].sort(([a], [b]) => a.localeCompare(b));

  /** A runner in this process, each task counting its partition's records per user. */
  const runHere = (define?: (task: ScaleOutTask) => ReturnType<typeof createJob>) => {
    const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    const counting = (task: ScaleOutTask) => {
      const job = task.createJob();
      job
        .source(natsSource<{ user: string }>({ servers: NATS, stream: input, subjects: partitions.subjects([task.keyGroup]), bounded: false }), { uid: 'clicks' })
        .pipe(
          task.keyBy((click) => click.user),
          fold(0, (n) => n + 1, { uid: 'count' }),
          forEach(() => undefined, { uid: 'drop' }),
        );
      return job;
    };
    return { storage, runner: runScaleOut(define ?? counting, { servers: NATS, group, member: 'here', maxParallelism: GROUPS, lease: LEASE, storage }) };
  };

  it('fails with PartitionMismatchError, naming the key and the producer fix, on a key published to another key group', { timeout: 120_000 }, async () => {
    await setUp('mismatch');
    const right = keyGroupOf('u0', GROUPS);
    const wrong = (right + 1) % GROUPS;
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    await streams.publish([[partitions.subject(wrong), JSON.stringify({ user: 'u0' })]]);
    const { storage, runner } = runHere();
    const { done } = await runner;
    try {
      await expect(done).rejects.toThrow(PartitionMismatchError);
      await expect(done).rejects.toThrow(`key "u0" belongs to key group ${right}, but it was read from key group ${wrong}'s partition`);
      await expect(done).rejects.toThrow(/keyGroupPartitions\(\.\.\.\)\.byKey/);
    } finally {
      await storage.close();
    }
  });

  it('rejects a define that returns a job task.createJob did not make, and bad options, with JobDefinitionError', { timeout: 120_000 }, async () => {
    await setUp('define');
    const { storage, runner } = runHere(() => createJob({ name: 'elsewhere' }));
    const { done } = await runner;
    try {
      await expect(done).rejects.toThrow(JobDefinitionError);
      await expect(done).rejects.toThrow(/define must return the job made by task\.createJob\(\) \(named 'weir-test-define-\w+-kg\d+'\), got job 'elsewhere'/);
      await expect(runScaleOut((task) => task.createJob(), { servers: NATS, group, member: 'm', storage, checkpointInterval: 0 })).rejects.toThrow(/checkpointInterval/);
      await expect(runScaleOut((task) => task.createJob(), { servers: NATS, group, member: 'm', storage: {} as never })).rejects.toThrow(/storage must be a checkpoint storage/);
    } finally {
      await storage.close();
    }
  });

  it('publishes what one process would, with a member joining and then leaving mid-run', { timeout: 240_000 }, async () => {
    await setUp('join');
    const RECORDS = 3000;
    await produce(0, 1000);
    const a = start('m-a');
    for (let kg = 0; kg < GROUPS; kg++) await a.waitFor((line) => line.startsWith(`start ${kg} `));
    await waitForOutput(500);
    const b = start('m-b');
    // b joins: it takes some key groups, each handed over by a with a final checkpoint, and restores them.
    await b.waitFor((line) => line.startsWith('start '));
    await produce(1000, 2000);
    await waitForOutput(1500);
    // a leaves (SIGTERM): b takes every key group, restoring each from what a committed.
    a.process.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    await produce(2000, RECORDS);
    await waitForOutput(RECORDS);
    b.process.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    expect(sorted(await outputPerUser())).toEqual(sorted(oneProcessRun(RECORDS)));
    // Key groups moved both ways, each restored from a committed checkpoint of its former owner.
    // Every key group went from a to b once (some as b joined, the rest as a left), each handed over by a final
    // checkpoint and restored by b from what a committed; nothing started twice.
    const startedByB = b.lines.filter((line) => line.startsWith('start '));
    expect(startedByB.map((line) => Number(line.split(' ')[1])).sort((x, y) => x - y), b.lines.join('\n')).toEqual(Array.from({ length: GROUPS }, (_, kg) => kg));
    for (const line of startedByB) expect(line).toMatch(new RegExp(`^start (\\d+) \\d+ ${group}/kg-\\1/t\\d+/${group}-kg\\1/chk-\\d+$`));
    expect(a.lines.filter((line) => line.startsWith('start ')).length, a.lines.join('\n')).toBe(GROUPS);
    expect(a.lines.filter((line) => /^end \d+ true$/.test(line)).length, a.lines.join('\n')).toBe(GROUPS);
  });

  it(
    'loses and doubles nothing through 20 SIGKILLs and 10 SIGSTOPs past the lease; a fenced member has nothing accepted',
    { timeout: 600_000 },
    async () => {
      await setUp('kill');
      const seed = Number(process.env.WEIR_SCALEOUT_SEED ?? 22);
      const pick = random(seed);
      const names = ['m-a', 'm-b', 'm-c'];
      const members = supervision.members;
      for (const name of names) supervise(name);
      await Promise.all([...members.values()].map((child) => child.waitFor((line) => line === 'joined')));
      /** The key groups a member's tasks run on, from what it printed. */
      const runs = (child: MemberChild) => {
        const running = new Set<number>();
        for (const line of child.lines) {
          const [event, kg] = line.split(' ');
          if (event === 'start') running.add(Number(kg));
          if (event === 'end') running.delete(Number(kg));
        }
        return running;
      };
      const BATCH = 100;
      let records = 0;
      const fenced: string[] = [];
      for (let round = 0; round < 30; round++) {
        await produce(records, records + BATCH);
        records += BATCH;
        const stop = round % 3 === 2;
        // A member to pause must be running tasks: right after kills, the key groups may still wait for their leases.
        const busy = () => names.filter((name) => runs(members.get(name)!).size > 0);
        while (stop && busy().length === 0) await new Promise((resolve) => setTimeout(resolve, 200));
        const candidates = stop ? busy() : names;
        const name = candidates[Math.floor(pick() * candidates.length)]!;
        const victim = members.get(name)!;
        supervision.planned.add(victim);
        if (stop) {
          // Paused past its lease until another member took one of its key groups over; resumed, it is fenced.
          const lost = runs(victim);
          const others = names.filter((other) => other !== name);
          const from = new Map(others.map((other) => [members.get(other)!, members.get(other)!.lines.length]));
          const tookOver = () =>
            others.some((other) => {
              // A member the supervisor started again meanwhile is read from its start.
              const child = members.get(other)!;
              return child.lines.slice(from.get(child) ?? 0).some((line) => line.startsWith('start ') && lost.has(Number(line.split(' ')[1])));
            });
          victim.process.kill('SIGSTOP');
          while (!tookOver()) await new Promise((resolve) => setTimeout(resolve, 200));
          victim.process.kill('SIGCONT');
          expect(await victim.exited, `seed ${seed}, round ${round}: ${victim.lines.slice(-5).join(' | ')}`).toBe(3);
          fenced.push(victim.lines.find((line) => line.startsWith('fenced '))!);
        } else {
          victim.process.kill('SIGKILL');
          await victim.exited;
        }
        supervise(name);
        // Joined (the supervisor may have started it again, if it failed to join while the others were busy).
        while (!members.get(name)!.lines.includes('joined')) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // Every record read and counted once all three run again; then they leave cleanly.
      await waitForOutput(records);
      // They leave cleanly (0), but for one the loaded machine kept from renewing in time, fenced (3), its key groups
      // then taken after the lease: like the unplanned restarts, no loss or double either way.
      const leaving = [...members.values()];
      const codes = await finish();
      codes.forEach((code, i) => expect(code === 0 || (code === 3 && leaving[i]!.lines.some((line) => /^fenced .*lost key group/.test(line))), leaving[i]!.lines.slice(-5).join(' | ')).toBe(true));
      expect(fenced).toHaveLength(10);
      for (const line of fenced) expect(line).toMatch(/lost key group/);
      // Nothing missing, nothing doubled: a fenced member's checkpoints were never committed, so what they covered
      // was never published; a dead member's last committed transactions were published again with the same ids.
      expect(sorted(await outputPerUser()), `seed ${seed}, ${supervision.unplanned} unplanned restarts`).toEqual(sorted(oneProcessRun(records)));
    },
  );

  it.skipIf(!postgresUp)('writes to PostgreSQL through postgresSink exactly once, with members SIGKILLed mid-run', { timeout: 300_000 }, async () => {
    await setUp('pg');
    const table = `${db.schema}.counts_${randomBytes(4).toString('hex')}`;
    await db.sql(`CREATE TABLE ${table} ("user" text NOT NULL, n integer NOT NULL)`);
    sinkArgs = [`postgres=${POSTGRES_URL}`, `table=${table}`];
    const rows = async () => Number((await db.rows<{ count: string }>(`SELECT count(*) FROM ${table}`))[0]!.count);
    const names = ['m-a', 'm-b'];
    for (const name of names) supervise(name);
    await Promise.all([...supervision.members.values()].map((child) => child.waitFor((line) => line === 'joined')));
    const BATCH = 300;
    let records = 0;
    // Each round: records in, some of them written, then a member SIGKILLed (its key groups go to the other once its
    // lease ran out, restored from the last commit, whose rows the sink's progress table tells were written already).
    for (let round = 0; round < 3; round++) {
      await produce(records, records + BATCH);
      records += BATCH;
      await waitForOutput(records - BATCH / 2, rows);
      const victim = supervision.members.get(names[round % 2]!)!;
      supervision.planned.add(victim);
      victim.process.kill('SIGKILL');
      await victim.exited;
      supervise(victim.name);
    }
    await waitForOutput(records, rows);
    await finish();
    const got = new Map<string, number[]>();
    for (const { user, n } of await db.rows<{ user: string; n: number }>(`SELECT "user", n FROM ${table} ORDER BY "user", n`)) got.set(user, [...(got.get(user) ?? []), n]);
    expect(sorted(got), `${supervision.unplanned} unplanned restarts; ${membersSay()}`).toEqual(sorted(oneProcessRun(records)));
  });

  it.skipIf(!NATS_SERVER_BINARY)('loses and doubles nothing when the nats-server is killed and started again mid-run', { timeout: 300_000 }, async () => {
    server = await privateNatsServer('scaleout-restart');
    await setUp('restart', server.servers);
    const names = ['m-a', 'm-b'];
    for (const name of names) supervise(name);
    await Promise.all([...supervision.members.values()].map((child) => child.waitFor((line) => line === 'joined')));
    await produce(0, 600);
    await waitForOutput(300);
    // The server dies mid-run and comes back on its store: the members' clients reconnect; a member that could not
    // renew for a whole lease was fenced and is started again, restoring from the commits.
    await server.kill();
    server.start();
    // Back on its store; a server that could not start (its port taken meanwhile, say) is started again.
    for (let attempt = 1; ; attempt++) {
      const answered = await streams.jsm.streams.info(input).then(() => true, () => false);
      if (answered) break;
      if (attempt % 100 === 0) {
        if (attempt >= 300) throw new Error(`the private nats-server did not answer for 60 s after it was started again; ${membersSay()}`);
        await server.kill();
        server.start();
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await produce(600, 1200);
    await waitForOutput(1200);
    expect(await finish()).toEqual([0, 0]);
    expect(sorted(await outputPerUser()), `${supervision.unplanned} unplanned restarts`).toEqual(sorted(oneProcessRun(1200)));
  });
});
