import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidQueryError, keyGroupOf, KeyGroupNotOwnedError, QueryableStateClient, QueryServerUnreachableError, type KeyPage, type KeyPageOptions } from 'weir';
import { assignedKeyGroups, keyGroupPartitions, scaleOutStatus, ScaleOutQueryClient } from 'weir/node';
import { ROOT } from '../../support/childJob';
import { childLines, killChildren, type MemberChild } from '../../support/childLines';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, type NatsStreams } from '../connectors/natsStreams';

const up = await serverUp('nats');

// Long enough that a member on this loaded machine renews in time, and that a SIGKILLed one still holds its key
// groups when the test asks for them right after.
const LEASE = 20_000;
const GROUPS = 8;
const USERS = 40;
const RECORDS = 400;
const FIXTURE = `${ROOT}/test/node/scaleout/fixtures/scaleOutQueryMember.ts`;
// Every user, in key order (strings by code units).
const USER_KEYS = Array.from({ length: USERS }, (_, i) => `u${i}`).sort();

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!up)('scale-out key listings: ScaleOutQueryClient.keys pages through every member\'s keys with one cursor', () => {
  const members: MemberChild[] = [];
  let streams: NatsStreams | undefined;
  let group = '';

  afterEach(async () => {
    await killChildren(members);
    if (streams === undefined) return;
    for (const name of [`KV_${group}-leases`, `KV_${group}-commits`, `OBJ_${group}-chk`]) await streams.jsm.streams.delete(name).catch(() => undefined);
    await streams.removeAll();
    streams = undefined;
  });

  const start = (name: string, input: string): MemberChild => {
    // From the sources under tsx, not a bundle: the query server's worker script is a file beside its module.
    const child = spawn(process.execPath, [FIXTURE, NATS, group, name, String(GROUPS), String(LEASE), input, `${group}-chk`], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, NODE_OPTIONS: '--import tsx' },
    });
    const member: MemberChild = { name, process: child, ...childLines(child), exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
    members.push(member);
    return member;
  };
  const urlOf = async (member: MemberChild) => (await member.waitFor((line) => line.startsWith('serving '))).slice('serving '.length);
  /** Polls `read` until `done` holds (the test's timeout bounds it); a member that exited unasked for ends the test. */
  const until = async <T>(read: () => Promise<T>, done: (value: T) => boolean, alive: MemberChild[]): Promise<T> => {
    for (;;) {
      for (const member of alive) if (member.process.exitCode !== null) throw new Error(`member ${member.name} exited (${member.process.exitCode}):\n${member.lines.join('\n')}`);
      const value = await read().catch(() => undefined);
      if (value !== undefined && done(value)) return value;
      await pause(200);
    }
  };
  /** The pages of a whole listing from `first` on (the first page of all when not given). */
  const pagesFrom = async (client: ScaleOutQueryClient, options: KeyPageOptions, first?: KeyPage): Promise<KeyPage[]> => {
    const pages = [first ?? (await client.keys('counts', options))];
    while (pages[pages.length - 1]!.cursor !== undefined) pages.push(await client.keys('counts', { ...options, cursor: pages[pages.length - 1]!.cursor }));
    return pages;
  };
  const keysOf = (pages: KeyPage[]) => pages.flatMap((page) => page.keys);

  it('merges the members\' pages, goes on across a hand-over, and names a member that is gone (then goes on with the same cursor)', { timeout: 300_000 }, async () => {
    group = `weir-test-keys-${randomBytes(4).toString('hex')}`;
    streams = await natsStreams();
    const input = await streams.create('wrkeys');
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    const messages: [string, string][] = [];
    for (let i = 0; i < RECORDS; i++) messages.push([partitions.subjectOfKey(`u${i % USERS}`), JSON.stringify({ user: `u${i % USERS}` })]);
    await streams.publish(messages);

    const a = start('m-a', input);
    const b = start('m-b', input);
    const [urlA, urlB] = [await urlOf(a), await urlOf(b)];
    const ownedA = assignedKeyGroups('m-a', ['m-a', 'm-b'], GROUPS);
    const ownedB = assignedKeyGroups('m-b', ['m-a', 'm-b'], GROUPS);
    expect(ownedA.length * ownedB.length).toBeGreaterThan(0);
    const settled = () =>
      until(
        () => scaleOutStatus({ servers: NATS, group }),
        (s) => s.keyGroups.length === GROUPS && s.keyGroups.every((kg) => kg.owner === (ownedA.includes(kg.keyGroup) ? 'm-a' : 'm-b')),
        members.filter((m) => m.process.exitCode === null),
      );
    await settled();

    const client = new ScaleOutQueryClient({ servers: NATS, group, timeoutMs: 90_000 });
    const impatient = new ScaleOutQueryClient({ servers: NATS, group, timeoutMs: 0 });
    try {
      // Pages of 7 from both members, in key order, each key once: the same listing one process would give.
      const pages = await until(() => pagesFrom(client, { limit: 7 }), (found) => keysOf(found).length === USERS, [a, b]);
      expect(keysOf(pages)).toEqual(USER_KEYS);
      expect(pages.map((page) => page.keys.length)).toEqual([7, 7, 7, 7, 7, 5]);
      expect(pages[pages.length - 1]!.cursor).toBeUndefined();
      expect(keysOf(await pagesFrom(client, { prefix: 'u1', limit: 4 }))).toEqual(USER_KEYS.filter((user) => user.startsWith('u1')));
      expect((await client.keys('counts', { from: 'u2', to: 'u3' })).keys).toEqual(USER_KEYS.filter((user) => user >= 'u2' && user < 'u3'));
      await expect(client.keys('counts', { asOf: 1 })).rejects.toThrow(InvalidQueryError);

      // Asked directly, a member lists only key groups it owns, and refuses a listing of the whole group.
      const direct = new QueryableStateClient(urlA);
      expect((await direct.keys('counts', { keyGroups: ownedA })).keys).toEqual(USER_KEYS.filter((user) => ownedA.includes(keyGroupOf(user, GROUPS))));
      const whole = await direct.keys('counts').catch((error: unknown) => error);
      expect(whole).toBeInstanceOf(InvalidQueryError);
      expect((whole as Error).message).toContain(`keys of 'counts' in group '${group}' span the key groups of every member: list them with ScaleOutQueryClient.keys`);
      const misdirected = await direct.keys('counts', { keyGroups: [ownedA[0]!, ownedB[0]!] }).catch((error: unknown) => error);
      expect(misdirected).toBeInstanceOf(KeyGroupNotOwnedError);
      expect(misdirected).toMatchObject({ keyGroup: ownedB[0], owner: 'm-b', url: urlB });
      await expect(direct.keys('counts', { keyGroups: [GROUPS] })).rejects.toThrow(`keyGroups must be distinct key groups from 0 to ${GROUPS - 1}, got [${GROUPS}]`);

      // A listing that spans a hand-over: b leaves after the first page; a restores b's key groups from its final
      // commits and the cursor goes on, every key once.
      const first = await client.keys('counts', { limit: 10 });
      b.process.kill('SIGTERM');
      expect(await b.exited).toBe(0);
      expect([...first.keys, ...keysOf(await pagesFrom(client, { limit: 10, cursor: first.cursor }))]).toEqual(USER_KEYS);
      expect((await scaleOutStatus({ servers: NATS, group })).members.map((m) => m.id)).toEqual(['m-a']);

      // b comes back; then a dies (SIGKILL) between two pages. Until its leases run out its key groups have no
      // member that answers: a client that does not wait names it; asked again with the same cursor, the listing
      // goes on once b restored a's key groups.
      const b2 = start('m-b', input);
      await urlOf(b2);
      await settled();
      const before = await client.keys('counts', { limit: 10 });
      a.process.kill('SIGKILL');
      await a.exited;
      const gone = await impatient.keys('counts', { limit: 10, cursor: before.cursor }).catch((error: unknown) => error);
      expect(gone).toBeInstanceOf(QueryServerUnreachableError);
      expect((gone as Error).message).toContain(`keys of 'counts' in group '${group}': member 'm-a' (key groups ${ownedA.join(', ')}) at ${urlA} cannot be reached`);
      expect((gone as Error).message).toContain('call keys again with the same cursor');
      expect([...before.keys, ...keysOf(await pagesFrom(client, { limit: 10, cursor: before.cursor }))]).toEqual(USER_KEYS);
    } finally {
      await client.close();
      await impatient.close();
    }
  });
});
