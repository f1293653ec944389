import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointNotFoundError, filter, fold, GroupSavepointError, keyGroupOf, map, readSavepoint } from 'weir';
import { joinScaleOut, keyGroupPartitions, natsObjectCheckpointStorage, natsSource, purgeConsumed, runScaleOut, scaleOutSavepoint, scaleOutStatus, type NatsObjectCheckpointStorage, type ScaleOutRunner, type ScaleOutTask } from 'weir/node';
import { bundleFixture, ROOT, type BundledFixture } from '../../support/childJob';
import { childLines, killChildren, type MemberChild, runWeirCommand } from '../../support/childLines';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, type NatsStreams } from '../connectors/natsStreams';

const up = await serverUp('nats');

const LEASE = 3000;
const GROUPS = 8;
const USERS = 40;

describe.skipIf(!up)('scale-out savepoints and retention: a group savepoint, groups started from it, old checkpoints and consumed input dropped', () => {
  let fixture: BundledFixture;
  let streams: NatsStreams | undefined;
  let storage: NatsObjectCheckpointStorage | undefined;
  const children: MemberChild[] = [];
  // The groups and bucket each test made, removed after it.
  let groups: string[] = [];
  let bucket = '';
  let input = '';
  const id = () => randomBytes(4).toString('hex');

  beforeAll(async () => {
    fixture = await bundleFixture(`${ROOT}/test/node/scaleout/fixtures/scaleOutRunner.ts`);
  }, 60_000);
  afterEach(async () => {
    await killChildren(children);
    await storage?.close();
    storage = undefined;
    if (streams === undefined) return;
    for (const name of [...groups.flatMap((group) => [`KV_${group}-leases`, `KV_${group}-commits`]), `OBJ_${bucket}`]) await streams.jsm.streams.delete(name).catch(() => undefined);
    await streams.removeAll();
    streams = undefined;
    groups = [];
  });
  afterAll(async () => {
    await fixture?.remove();
  });

  const setUp = async (name: string) => {
    streams = await natsStreams(NATS);
    bucket = `weir-test-${name}-chk-${id()}`;
    storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    input = await streams.create('wsin');
    return streams;
  };
  const newGroup = (name: string) => {
    const group = `weir-test-${name}-${id()}`;
    groups.push(group);
    return group;
  };
  /** A runner of the fixture in a process of its own: counts per user of `input`, published to `output`. */
  const start = (group: string, name: string, output: string, fromSavepoint?: string): MemberChild => {
    const args = [fixture.file, NATS, group, name, String(GROUPS), String(LEASE), input, output, bucket, ...(fromSavepoint === undefined ? [] : [`from=${fromSavepoint}`])];
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const { lines, waitFor } = childLines(child);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const handle: MemberChild = { name, process: child, lines, waitFor, exited };
    children.push(handle);
    return handle;
  };
  /** Publishes records `from` … `to - 1` (user `u<i % USERS>`), each to its user's key group's partition. */
  const produce = async (from: number, to: number) => {
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    const messages: [string, string][] = [];
    for (let i = from; i < to; i++) messages.push([partitions.subjectOfKey(`u${i % USERS}`), JSON.stringify({ user: `u${i % USERS}` })]);
    await streams!.publish(messages);
  };
  /** Waits until `output` holds `count` counts; fails after 100 s with what the members printed last. */
  const waitForOutput = async (output: string, count: number, members: MemberChild[]) => {
    const deadline = Date.now() + 100_000;
    const published = async () => (await streams!.jsm.streams.info(output)).state.messages;
    while ((await published()) < count) {
      if (Date.now() > deadline) throw new Error(`${await published()} of ${count} counts in ${output} after 100 s; ${members.map((child) => `${child.name}: ${child.lines.slice(-4).join(' | ')}`).join('; ')}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  /** The counts a single process publishes for records `from` … `to - 1` after it counted records 0 … `from - 1`. */
  const oneProcessRun = (from: number, to: number) => {
    const expected = new Map<string, number[]>();
    for (let i = 0; i < to; i++) {
      const user = `u${i % USERS}`;
      const counts = expected.get(user) ?? [];
      counts.push(counts.length + 1);
      expected.set(user, counts);
    }
    const before = new Map<string, number>();
    for (let i = 0; i < from; i++) before.set(`u${i % USERS}`, (before.get(`u${i % USERS}`) ?? 0) + 1);
    return sorted(new Map([...expected].map(([user, counts]) => [user, counts.slice(before.get(user) ?? 0)])));
  };
  const outputPerUser = async (output: string) => {
    const got = new Map<string, number[]>();
    for (const message of await streams!.contents(output)) {
      const { user, n } = JSON.parse(message.data) as { user: string; n: number };
      got.set(user, [...(got.get(user) ?? []), n]);
    }
    return sorted(got);
  };
  const weir = (...args: string[]) => runWeirCommand(ROOT, ...args);
  const sorted = (map: Map<string, number[]>) => [...map.entries()].sort(([a], [b]) => a.localeCompare(b));
  /**
   * SIGTERM to each member; resolves with 0 per member that left cleanly, or its exit code and last lines. One that the loaded machine kept from
   * renewing its leases in time while the others left is fenced (3) instead, its key groups taken after the lease:
   * that counts as 0 when it says so, as in runScaleOut's tests; the output's checks still hold it to nothing lost.
   */
  const leave = async (members: MemberChild[]) => {
    for (const child of members) child.process.kill('SIGTERM');
    return exits(members);
  };
  /** What `leave` resolves with, for members that leave on their own (stopped with a savepoint). */
  const exits = async (members: MemberChild[]) => {
    const codes = await Promise.all(members.map((child) => child.exited));
    const clean = (code: number | null, child: MemberChild) => code === 0 || (code === 3 && child.lines.some((line) => /^fenced .*lost key group/.test(line)));
    return codes.map((code, i) => (clean(code, members[i]!) ? 0 : `${code}: ${members[i]!.lines.slice(-5).join(' | ')}`));
  };

  it('stops a 2-member group with a savepoint, and groups of 1 and of 3 members go on from it: nothing lost, nothing doubled', { timeout: 300_000 }, async () => {
    const nats = await setUp('stop');
    const first = newGroup('first');
    const output = await nats.create('wsout');
    await produce(0, 1000);
    const members = [start(first, 'm-a', output), start(first, 'm-b', output)];
    await waitForOutput(output, 1000, members);

    // Every task drains, takes its savepoint as its final snapshot, answers, and its member leaves.
    const target = `savepoints/${first}`;
    const savepoint = await scaleOutSavepoint({ servers: NATS, group: first, storage: storage!, target, stop: true, maxParallelism: GROUPS, timeout: 60_000 }).catch((error: unknown) => {
      throw new Error(`${String(error)}; ${members.map((child) => `${child.name}: ${child.lines.slice(-12).join(' | ')}`).join('; ')}`);
    });
    expect(Object.keys(savepoint.keyGroups).map(Number)).toEqual(Array.from({ length: GROUPS }, (_, kg) => kg));
    for (const [kg, path] of Object.entries(savepoint.keyGroups)) expect(path).toMatch(new RegExp(`^${target}/kg-${kg}/savepoint-${first}-kg${kg}-\\d+-[0-9a-f]+$`));
    expect(await exits(members)).toEqual([0, 0]);
    const savepointLines = members.flatMap((child) => child.lines.filter((line) => line.startsWith('savepoint ')));
    expect(savepointLines.map((line) => Number(line.split(' ')[1])).sort((a, b) => a - b)).toEqual(Array.from({ length: GROUPS }, (_, kg) => kg));
    // The group's output holds what the records before the stop make, each count once.
    expect(await outputPerUser(output)).toEqual(oneProcessRun(0, 1000));

    await produce(1000, 2000);
    // One member, in a new group, on the same output: every key group restores from its savepoint and reads on from
    // its offsets in it, so the output is one process's run over all 2000 records.
    const second = newGroup('one');
    const alone = start(second, 'm-1', output, target);
    await waitForOutput(output, 2000, [alone]);
    expect(await leave([alone])).toEqual([0]);
    const restored = alone.lines.filter((line) => line.startsWith('start '));
    expect(restored).toHaveLength(GROUPS);
    for (const line of restored) expect(line).toMatch(new RegExp(`^start (\\d+) \\d+ ${target}/kg-\\1/savepoint-${first}-kg\\1-\\d+-[0-9a-f]+$`));
    expect(await outputPerUser(output)).toEqual(oneProcessRun(0, 2000));

    // Three members, in another new group, on an output of their own: what they publish is what one process publishes
    // for the records after the savepoint, the counts going on from the savepoint's.
    const third = newGroup('three');
    const output3 = await nats.create('wsout3');
    const three = [start(third, 'm-x', output3, target), start(third, 'm-y', output3, target), start(third, 'm-z', output3, target)];
    await waitForOutput(output3, 1000, three);
    expect(await leave(three)).toEqual([0, 0, 0]);
    expect(await outputPerUser(output3)).toEqual(oneProcessRun(1000, 2000));
  });

  it('takes a savepoint of a running group without stopping it; a group started from it runs on from its offsets', { timeout: 300_000 }, async () => {
    const nats = await setUp('running');
    const first = newGroup('live');
    const output = await nats.create('wsout');
    await produce(0, 600);
    const member = start(first, 'm-a', output);
    await waitForOutput(output, 600, [member]);
    const target = `savepoints/${first}`;
    // `weir savepoint` is scaleOutSavepoint from the command line.
    const taken = await weir('savepoint', '--nats', NATS, '--group', first, '--bucket', bucket, '--target', target, '--max-parallelism', String(GROUPS));
    expect(taken, taken.stderr).toMatchObject({ code: 0 });
    expect(taken.stdout).toBe(`savepoint of group ${first}: ${target} in bucket ${bucket}, ${GROUPS} key groups\nstart a group from it: runScaleOut(define, { …, fromSavepoint: '${target}' })\n`);
    // The target holds one now: a second savepoint into it is refused.
    await expect(scaleOutSavepoint({ servers: NATS, group: first, storage: storage!, target, maxParallelism: GROUPS })).rejects.toThrow(`'${target}' already holds a group savepoint`);
    // The group runs on: it counts records published after the savepoint.
    await produce(600, 900);
    await waitForOutput(output, 900, [member]);
    expect(await leave([member])).toEqual([0]);
    expect(member.lines.filter((line) => line.startsWith('end ')).length).toBe(GROUPS);
    // A new group from the savepoint counts the records after it again, from the savepoint's counts.
    const second = newGroup('fork');
    const output2 = await nats.create('wsout2');
    const fork = start(second, 'm-1', output2, target);
    await waitForOutput(output2, 300, [fork]);
    expect(await leave([fork])).toEqual([0]);
    expect(await outputPerUser(output2)).toEqual(oneProcessRun(600, 900));
  });

  it('fails with GroupSavepointError naming the key groups nobody answered for; no group starts from that target', { timeout: 120_000 }, async () => {
    await setUp('silent');
    const group = newGroup('silent');
    // A member that owns every key group but runs no tasks: it never answers a savepoint request.
    const member = await joinScaleOut({ servers: NATS, group, member: 'mute', maxParallelism: GROUPS, lease: LEASE });
    const target = `savepoints/${group}`;
    try {
      const asked = scaleOutSavepoint({ servers: NATS, group, storage: storage!, target, maxParallelism: GROUPS, timeout: 1500 });
      await expect(asked).rejects.toThrow(GroupSavepointError);
      await expect(asked).rejects.toThrow(`no member answered for key groups 0, 1, 2, 3, 4, 5, 6, 7 within 1500 ms`);
    } finally {
      await member.leave();
    }
    const runner = await runScaleOut((task) => task.createJob(), { servers: NATS, group: newGroup('after'), member: 'm', maxParallelism: GROUPS, lease: LEASE, storage: storage!, fromSavepoint: target });
    await expect(runner.done).rejects.toThrow(CheckpointNotFoundError);
    await expect(runner.done).rejects.toThrow(`'${target}' is not a complete group savepoint`);
    await expect(scaleOutSavepoint({ servers: NATS, group, storage: storage!, target: '' })).rejects.toThrow(/target must be a directory/);
    const cli = await weir('savepoint', '--nats', NATS, '--group', group, '--bucket', bucket, '--target', target, '--max-parallelism', String(GROUPS), '--timeout', '1000');
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/^weir savepoint: scaleOutSavepoint of group '[-\w]+' into '[-\w/]+' did not complete: no member answered for key groups 0, 1, 2, 3, 4, 5, 6, 7 within 1000 ms/);
    expect((await weir('savepoint', '--nats', NATS, '--group', group)).code).toBe(2);
  });

  it('keeps one checkpoint per key group and drops a former owner\'s; purges the input its commits consumed, and restores after', { timeout: 300_000 }, async () => {
    const nats = await setUp('retain');
    const group = newGroup('retain');
    const output = await nats.create('wsout');
    await produce(0, 600);
    const a = start(group, 'm-a', output);
    await waitForOutput(output, 600, [a]);
    expect(await leave([a])).toEqual([0]);
    // Another member takes every key group over, restores from what a committed, commits its own and drops a's.
    const b = start(group, 'm-b', output);
    for (let kg = 0; kg < GROUPS; kg++) await b.waitFor((line) => line.startsWith(`start ${kg} `));
    const tokenOf = (kg: number) => b.lines.find((line) => line.startsWith(`start ${kg} `))!.split(' ')[2];
    // a's directories go once b committed a checkpoint of its own, in the background: wait for that (100 s at most).
    const deadline = Date.now() + 100_000;
    // Each look lists the whole bucket: once a second, not to load the server the member renews its leases on.
    for (let kg = 0; kg < GROUPS; kg++) {
      while ((await storage!.list(`${group}/kg-${kg}`)).join() !== `t${tokenOf(kg)}`) {
        if (Date.now() > deadline) throw new Error(`key group ${kg} still holds ${(await storage!.list(`${group}/kg-${kg}`)).join(', ')}; b: ${b.lines.slice(-4).join(' | ')}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    expect(await leave([b])).toEqual([0]);
    for (let kg = 0; kg < GROUPS; kg++) {
      const token = tokenOf(kg);
      expect(await storage!.list(`${group}/kg-${kg}`), `key group ${kg}`).toEqual([`t${token}`]);
      // retain: 1 (the default): the committed checkpoint alone.
      expect(await storage!.list(`${group}/kg-${kg}/t${token}/${group}-kg${kg}`), `key group ${kg}`).toHaveLength(1);
    }
    const status = await scaleOutStatus({ servers: NATS, group, storage: storage! });
    expect(status.keyGroups.map((kg) => kg.checkpoint?.error ?? kg.checkpoint?.id)).toEqual(Array.from({ length: GROUPS }, () => expect.any(Number)));

    // What the commits consumed is purged; what they did not read yet stays.
    await produce(600, 700);
    const purged = await purgeConsumed({ servers: NATS, stream: input, group, source: 'clicks', storage: storage! });
    expect(purged.map((subject) => subject.subject).sort()).toEqual(keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS }).subjects(Array.from({ length: GROUPS }, (_, kg) => kg)).sort());
    expect(purged.reduce((sum, subject) => sum + subject.purged, 0)).toBe(600);
    expect((await nats.jsm.streams.info(input)).state.messages).toBe(100);
    const c = start(group, 'm-c', output);
    await waitForOutput(output, 700, [c]);
    expect(await leave([c])).toEqual([0]);
    expect(await outputPerUser(output)).toEqual(oneProcessRun(0, 700));
  });
  it('purges below a commit that sits in the middle of a batch message, and the new owner reads the rest of that message', { timeout: 300_000 }, async () => {
    const nats = await setUp('midbatch');
    const group = newGroup('midbatch');
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    const user = 'u0';
    const keyGroup = keyGroupOf(user, GROUPS);
    const subject = partitions.subjectOfKey(user);
    type Click = { user: string; i?: number; poison?: true };
    /** A task of the group: counts its partition's clicks per user; `onClick` sees each click before it is counted. */
    const define = (onClick: (click: Click, keyGroup: number) => void) => (task: ScaleOutTask) => {
      // Three records per read: a checkpoint barrier falls between two records of a 1,000-record message.
      const job = task.createJob({ chunkSize: 3, onWarning: () => undefined });
      job
        .source(natsSource<Click>({ servers: NATS, stream: input, subjects: partitions.subjects([task.keyGroup]), bounded: false }), { uid: 'clicks' })
        .pipe(
          map((click: Click) => (onClick(click, task.keyGroup), click)),
          filter((click: Click) => click.poison === undefined),
          task.keyBy((click: Click) => click.user),
          fold(0, (n: number) => n + 1, { uid: 'count', queryable: 'counts' }),
        );
      return job;
    };
    const countOf = async (runner: ScaleOutRunner) => runner.task(keyGroup)?.query<number>('counts', user);
    const until = async (done: () => Promise<boolean>) => {
      while (!(await done().catch(() => false))) await new Promise((resolve) => setTimeout(resolve, 100));
    };
    const options = { servers: NATS, group, maxParallelism: GROUPS, lease: LEASE, storage: storage!, checkpointInterval: 3_600_000 };

    // a checkpoints once, by hand, while it reads message 2, and never again (the interval is an hour): its commit
    // stays in the middle of that message while it reads on to the end.
    let checkpointed: Promise<{ id: number }> | undefined;
    const a: ScaleOutRunner = await runScaleOut(
      define((click, kg) => {
        if (click.poison) throw new Error('poison: a dies without a final checkpoint');
        if (kg === keyGroup && click.i === 500) checkpointed = a.task(keyGroup)!.checkpoint();
      }),
      { ...options, member: 'm-a' },
    );
    const records = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => JSON.stringify({ user, i: from + k }));
    // Sequence 1: records 0–9; 2: records 10–1009; 3: records 1010–1019.
    await nats.publishBatches([
      [subject, records(0, 10)],
      [subject, records(10, 1010)],
      [subject, records(1010, 1020)],
    ]);
    await until(async () => checkpointed !== undefined);
    const { id } = await checkpointed!;
    await until(async () => (await countOf(a)) === 1020);
    const status = await scaleOutStatus({ servers: NATS, group, storage: storage! });
    const committed = status.keyGroups.find((kg) => kg.keyGroup === keyGroup)!.checkpoint!;
    expect(committed.id).toBe(id);
    // The source's offset in the commit: message 2, with the records of it read before the barrier.
    let offset: unknown;
    for await (const { operator } of (await readSavepoint(storage!, committed.path)).payloads('clicks')) {
      const splits = (operator as { offset?: { splits?: { id: string; offset: unknown }[] } } | undefined)?.offset?.splits ?? [];
      offset ??= splits.find((split) => split.id === subject)?.offset;
    }
    expect(offset).toEqual([2, expect.any(Number)]);
    const readOfMessage = (offset as [number, number])[1];
    expect(readOfMessage).toBeGreaterThan(0);
    expect(readOfMessage).toBeLessThan(1000);

    // Only message 1 goes: message 2 is still needed (the other key groups have no commit, so nothing of theirs).
    expect(await purgeConsumed({ servers: NATS, stream: input, group, source: 'clicks', storage: storage! })).toEqual([{ subject, below: 2, purged: 1 }]);
    expect((await nats.jsm.streams.info(input)).state).toMatchObject({ messages: 2, first_seq: 2 });

    // a fails on a poisoned record: it leaves, handing key group over without a commit of its own after the first.
    await nats.publish([[subject, JSON.stringify({ user, poison: true })]]);
    await expect(a.done).rejects.toThrow('poison');
    // b restores the commit: it reads message 2 from the record after the barrier's, then message 3, and counts
    // every record once though message 1 is gone.
    const seen: number[] = [];
    const b = await runScaleOut(
      define((click, kg) => {
        if (kg === keyGroup && click.i !== undefined) seen.push(click.i);
      }),
      { ...options, member: 'm-b' },
    );
    try {
      await until(async () => (await countOf(b)) === 1020);
      expect(seen).toEqual(Array.from({ length: 1020 - 10 - readOfMessage }, (_, k) => 10 + readOfMessage + k));
    } finally {
      await b.leave();
    }
  });
});
