import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectorError, keyGroupOf, KeyGroupNotOwnedError, QueryableStateClient } from 'weir';
import { assignedKeyGroups, keyGroupPartitions, natsObjectCheckpointStorage, scaleOutStatus, ScaleOutQueryClient, type ScaleOutStatus } from 'weir/node';
import { ROOT } from '../../support/childJob';
import { childLines, runWeirCommand } from '../../support/childLines';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, type NatsStreams } from '../connectors/natsStreams';

const up = await serverUp('nats');

// Long enough that a member on this loaded machine renews in time (a hand-over on SIGTERM does not wait for it).
const LEASE = 10_000;
const GROUPS = 8;
const USERS = 40;
const RECORDS = 400;
const FIXTURE = `${ROOT}/test/node/scaleout/fixtures/scaleOutQueryMember.ts`;

/** A member process, the lines it printed, and a wait for one. */
interface Member {
  readonly process: ChildProcess;
  readonly lines: string[];
  waitFor(match: (line: string) => boolean): Promise<string>;
  readonly exited: Promise<number | null>;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Where the long test is, on stderr: a run that ends at the test's timeout still says which step it reached. */
const step = (name: string) => console.error(`[scale-out operations ${new Date().toISOString()}] ${name}`);

/** Members that exit unasked for (fenced, failed) end the test at once, with what they printed. */
const running = new Set<Member>();

/** Every member started, for what they printed when a wait ends without what it waited for. */
const started: Member[] = [];
const printed = () => started.map((member, i) => `member #${i + 1} (pid ${member.process.pid}, exit ${member.process.exitCode}):\n  ${member.lines.slice(-12).join('\n  ')}`).join('\n');

/**
 * Polls `read` until `done` holds for what it returns, and returns that; after 120 s (a hand-over takes a lease of
 * 10 s and a restore) fails naming `what`, the last value read and what each member printed last.
 */
async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 120_000;
  let last: unknown;
  for (;;) {
    for (const member of running) {
      if (member.process.exitCode !== null) throw new Error(`a member exited (${member.process.exitCode}) unasked for:\n${member.lines.join('\n')}`);
    }
    const value = await settledWithin(read(), 30_000, what).catch((error: unknown) => (last = error, undefined));
    if (value !== undefined) {
      if (done(value)) return value;
      last = value;
    }
    if (Date.now() > deadline) throw new Error(`not after 120 s: ${what}; last read: ${JSON.stringify(last instanceof Error ? String(last) : last)?.slice(0, 2000)}\n${printed()}`);
    await pause(200);
  }
}

/** What `promise` gives, or a failure when it has not settled within `ms` (a read that hangs must not hang the test). */
async function settledWithin<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`a read for '${what}' did not settle within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** What `promise` gives within 120 s, or a failure naming `what` and what each member printed last. */
async function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  return settledWithin(promise, 120_000, what).catch((error: unknown) => {
    throw new Error(`${String(error)}\n${printed()}`);
  });
}

/** The member's exit code, or a failure naming what the members printed when it has not exited within 120 s. */
async function exitOf(member: Member): Promise<number | null> {
  return bounded(member.exited, `member pid ${member.process.pid} to exit`);
}

describe.skipIf(!up)('scale-out operations: the group status, weir inspect --group, and queries routed to a key\'s owner', () => {
  const members: Member[] = [];
  let streams: NatsStreams | undefined;
  let group = '';
  let bucket = '';

  afterEach(async () => {
    running.clear();
    started.splice(0);
    for (const member of members.splice(0)) {
      if (member.process.exitCode === null && member.process.signalCode === null) member.process.kill('SIGKILL');
      await member.exited;
    }
    if (streams === undefined) return;
    for (const name of [`KV_${group}-leases`, `KV_${group}-commits`, `OBJ_${bucket}`]) await streams.jsm.streams.delete(name).catch(() => undefined);
    await streams.removeAll();
    streams = undefined;
  });

  const start = (id: string, input: string): Member => {
    // From the sources under tsx, not a bundle: the query server's worker script is a file beside its module.
    const child = spawn(process.execPath, [FIXTURE, NATS, group, id, String(GROUPS), String(LEASE), input, bucket], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, NODE_OPTIONS: '--import tsx' },
    });
    const { lines, waitFor } = childLines(child);
    const member: Member = {
      process: child,
      lines,
      waitFor,
      exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
    };
    members.push(member);
    started.push(member);
    running.add(member);
    return member;
  };
  const weir = (...args: string[]) => runWeirCommand(ROOT, ...args);

  it('shows members, owners and committed checkpoints, and answers a key from whichever member owns it, through a hand-over and a SIGKILL', { timeout: 300_000 }, async () => {
    const id = randomBytes(4).toString('hex');
    group = `weir-test-ops-${id}`;
    bucket = `weir-test-ops-chk-${id}`;
    streams = await natsStreams();
    const input = await streams.create('wrops');
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    const messages: [string, string][] = [];
    for (let i = 0; i < RECORDS; i++) messages.push([partitions.subjectOfKey(`u${i % USERS}`), JSON.stringify({ user: `u${i % USERS}` })]);
    await streams.publish(messages);

    const a = start('m-a', input);
    const b = start('m-b', input);
    const urlOf = async (member: Member) => {
      const exitedFirst = member.exited.then((code) => Promise.reject(new Error(`member pid ${member.process.pid} exited (${code}) before it served queries`)));
      const line = await bounded(Promise.race([member.waitFor((line) => line.startsWith('serving ')), exitedFirst]), 'a member to serve queries');
      return line.slice('serving '.length);
    };
    const [urlA, urlB] = [await urlOf(a), await urlOf(b)];
    step('both members serve');
    // Every key group owned as the assignment says, and committed by its owner (a hand-over's new owner commits its
    // first checkpoint soon after it restored).
    const expectedOwner = (kg: number) => (assignedKeyGroups('m-a', ['m-a', 'm-b'], GROUPS).includes(kg) ? 'm-a' : 'm-b');
    const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    let status: ScaleOutStatus;
    try {
      status = await until(
        'every key group owned as assigned and committed by its owner',
        () => scaleOutStatus({ servers: NATS, group, storage }),
        (s) =>
          s.members.length === 2 &&
          s.members.every((m) => m.queryUrl !== undefined) &&
          s.keyGroups.length === GROUPS &&
          s.keyGroups.every((kg) => kg.owner === expectedOwner(kg.keyGroup) && kg.committedBy === kg.owner && kg.checkpoint?.id !== undefined),
      );
    } finally {
      await storage.close();
    }
    expect(status.group).toBe(group);
    expect(status.members.map((m) => [m.id, m.queryUrl])).toEqual([
      ['m-a', urlA],
      ['m-b', urlB],
    ]);
    for (const member of status.members) {
      expect(member.owns).toEqual(assignedKeyGroups(member.id, ['m-a', 'm-b'], GROUPS));
      expect(member.heartbeatAgeMs).toBeGreaterThanOrEqual(0);
    }
    for (const kg of status.keyGroups) {
      expect(kg.checkpoint!.path).toMatch(new RegExp(`^${group}/kg-${kg.keyGroup}/t\\d+/${group}-kg${kg.keyGroup}/chk-${kg.checkpoint!.id}$`));
      expect(kg.checkpoint!.timestamp).toBeGreaterThan(0);
      expect(kg.token).toBeGreaterThan(0);
    }
    const owned = (member: string) => status.members.find((m) => m.id === member)!.owns;
    expect(owned('m-a').length).toBeGreaterThan(0);
    expect(owned('m-b').length).toBeGreaterThan(0);

    // weir inspect prints the same, as a table or as JSON.
    step('status as assigned');
    const shown = await bounded(weir('inspect', '--nats', NATS, '--group', group, '--bucket', bucket), 'weir inspect --group');
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`scale-out group ${group}: 2 live members, ${GROUPS} of ${GROUPS} key groups owned`);
    expect(shown.stdout).toMatch(/MEMBER\s+HEARTBEAT\s+KEY GROUPS\s+QUERIES/);
    expect(shown.stdout).toMatch(new RegExp(`m-a\\s+\\d+\\.\\d s ago\\s+[\\d,-]+\\s+${urlA.replace(/[.]/g, '\\.')}`));
    for (const kg of status.keyGroups) expect(shown.stdout).toMatch(new RegExp(`\\n\\s+${kg.keyGroup}\\s+${kg.owner}\\s+\\d+\\s+${kg.owner}\\s+${group}/kg-${kg.keyGroup}/\\S+\\s+\\d+\\s+\\d{4}-`));
    const json = await bounded(weir('inspect', '--nats', NATS, '--group', group, '--json'), 'weir inspect --group --json');
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout) as ScaleOutStatus;
    expect(parsed.members.map((m) => m.id)).toEqual(['m-a', 'm-b']);
    expect(parsed.keyGroups.map((kg) => kg.owner)).toEqual(status.keyGroups.map((kg) => kg.owner));

    // Each member's query server answers the group's status too, with which member it is and the tasks it runs.
    step('weir inspect printed');
    const served = (await bounded(fetch(`${urlA}/v1/group`).then((response) => response.json()), 'GET /v1/group')) as ScaleOutStatus & { member: string; running: number[] };
    expect(served.member).toBe('m-a');
    expect(served.running).toEqual(owned('m-a'));
    expect(served.members.map((m) => [m.id, m.owns])).toEqual(status.members.map((m) => [m.id, m.owns]));
    expect(served.keyGroups.map((kg) => kg.owner)).toEqual(status.keyGroups.map((kg) => kg.owner));
    // Checkpoints go on meanwhile (and a new owner's first commit moves the key group to its own epoch directory).
    for (const kg of served.keyGroups) expect(kg.checkpoint!.path).toMatch(new RegExp(`^${group}/kg-${kg.keyGroup}/t\\d+/${group}-kg${kg.keyGroup}/chk-\\d+$`));

    // The client asks each key's owner: every user's count, wherever its key group lives.
    const client = new ScaleOutQueryClient({ servers: NATS, group });
    try {
      const users = Array.from({ length: USERS }, (_, i) => `u${i}`);
      const counts = async () => Promise.all(users.map((user) => client.get<number>('counts', user)));
      expect(await until('every count from both members', counts, (values) => values.every((n) => n === RECORDS / USERS))).toEqual(users.map(() => RECORDS / USERS));
      for (const user of users) {
        const where = await bounded(client.ownerOf(user), `ownerOf(${user})`);
        expect(where).toEqual({ keyGroup: keyGroupOf(user, GROUPS), owner: expectedOwner(keyGroupOf(user, GROUPS)), url: where.owner === 'm-a' ? urlA : urlB });
      }

      // Asked directly, a member answers only its own key groups; for the others it names the owner and its address.
      const ofB = users.find((user) => expectedOwner(keyGroupOf(user, GROUPS)) === 'm-b')!;
      const ofA = users.find((user) => expectedOwner(keyGroupOf(user, GROUPS)) === 'm-a')!;
      expect(await bounded(new QueryableStateClient(urlA).get('counts', ofA), 'a key of a from a')).toBe(RECORDS / USERS);
      const misdirected = await bounded(new QueryableStateClient(urlA).get('counts', ofB).catch((error: unknown) => error), 'a key of b from a');
      expect(misdirected).toBeInstanceOf(KeyGroupNotOwnedError);
      expect(misdirected).toMatchObject({ keyGroup: keyGroupOf(ofB, GROUPS), owner: 'm-b', url: urlB });
      expect((misdirected as Error).message).toContain(`member 'm-a' of group '${group}' does not own key group ${keyGroupOf(ofB, GROUPS)} (key "${ofB}"): its owner is member 'm-b' at ${urlB}`);

      step('counts and owners answered');
      // b leaves (SIGTERM): a takes its key groups over, restored from b's commits, and the client follows them.
      running.delete(b);
      b.process.kill('SIGTERM');
      expect(await exitOf(b)).toBe(0);
      expect(await until('every count from a after b left', counts, (values) => values.every((n) => n === RECORDS / USERS))).toEqual(users.map(() => RECORDS / USERS));
      expect(await bounded(client.ownerOf(ofB), 'ownerOf a key of b after b left')).toEqual({ keyGroup: keyGroupOf(ofB, GROUPS), owner: 'm-a', url: urlA });
      const after = await bounded(scaleOutStatus({ servers: NATS, group }), 'the status after b left');
      expect(after.members.map((m) => m.id)).toEqual(['m-a']);
      expect(after.members[0]!.owns).toEqual(Array.from({ length: GROUPS }, (_, kg) => kg));

      // b comes back (a new address), then a dies (SIGKILL): once a's leases ran out, b claims every key group,
      // restores it from a's commits, and the client, which kept asking, reads every count from b.
      step('a answers after b left');
      const b2 = start('m-b', input);
      const urlB2 = await urlOf(b2);
      await until(
        'b, back, owning its key groups again',
        () => scaleOutStatus({ servers: NATS, group }),
        (s) => s.keyGroups.every((kg) => kg.owner === expectedOwner(kg.keyGroup)),
      );
      step('b back with its key groups');
      running.delete(a);
      a.process.kill('SIGKILL');
      await exitOf(a);
      expect(await until('every count from b after a was killed', counts, (values) => values.every((n) => n === RECORDS / USERS))).toEqual(users.map(() => RECORDS / USERS));
      expect(await bounded(client.ownerOf(ofA), 'ownerOf a key of a after a was killed')).toEqual({ keyGroup: keyGroupOf(ofA, GROUPS), owner: 'm-b', url: urlB2 });
    } finally {
      await bounded(client.close(), 'the query client to close');
    }
  });

  it('names the group and the way out when no member ever joined it, in scaleOutStatus and weir inspect', { timeout: 60_000 }, async () => {
    const missing = `weir-test-ops-missing-${randomBytes(4).toString('hex')}`;
    const failure = await scaleOutStatus({ servers: NATS, group: missing }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ConnectorError);
    expect((failure as Error).message).toContain(`scale-out group '${missing}' has no KV buckets '${missing}-leases' and '${missing}-commits' on this server`);
    const shown = await weir('inspect', '--nats', NATS, '--group', missing);
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain('the buckets exist once a member joined');
    const usage = await weir('inspect', '--group', missing);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('needs both --nats and --group');
  });
});
