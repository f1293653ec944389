import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { JobDefinitionError, OwnershipLostError } from 'weir';
import { assignedKeyGroups, joinScaleOut, rendezvousOwner } from 'weir/node';
import { bundleFixture, ROOT, type BundledFixture } from '../../support/childJob';
import { childLines, killChildren } from '../../support/childLines';
import { serverUp } from '../../support/servers';
import { NATS } from '../connectors/natsStreams';
import { NATS_SERVER_BINARY, privateNatsServer, type PrivateNatsServer } from '../../support/privateNatsServer';

const up = await serverUp('nats');

// Long enough that a member of a loaded 2-core machine renews in time (it renews every quarter of it).
const LEASE = 4000;
const GROUPS = 16;
const all = Array.from({ length: GROUPS }, (_, kg) => kg);

describe('rendezvous assignment', () => {
  it('gives every key group exactly one owner, the same whatever the order the members are listed in', () => {
    const members = ['m-a', 'm-b', 'm-c'];
    const parts = members.map((member) => assignedKeyGroups(member, members, 128));
    expect(parts.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 128 }, (_, kg) => kg));
    for (const kg of [0, 5, 77, 127]) expect(rendezvousOwner(kg, ['m-c', 'm-a', 'm-b'])).toBe(rendezvousOwner(kg, members));
  });

  it('moves only the key groups a joining member wins, all to it: a third of them when a third joins two', () => {
    const two = ['m-a', 'm-b'];
    const three = [...two, 'm-c'];
    const moved = Array.from({ length: 128 }, (_, kg) => kg).filter((kg) => rendezvousOwner(kg, two) !== rendezvousOwner(kg, three));
    for (const kg of moved) expect(rendezvousOwner(kg, three)).toBe('m-c');
    expect(moved.length / 128).toBeLessThanOrEqual(0.4);
    expect(moved.length / 128).toBeGreaterThan(0.2);
  });
});

/** A member in a child process, and the lines it printed. */
interface Child {
  readonly process: ChildProcess;
  readonly lines: string[];
  /** Resolves with the first line from line `from` on (0 by default) for which `match` holds; waits for it if need be. */
  waitFor(match: (line: string) => boolean, from?: number): Promise<string>;
  owned(): number[];
  exited: Promise<number | null>;
}

describe.skipIf(!up)('scale-out members on JetStream KV, in processes of their own', () => {
  let fixture: BundledFixture;
  const children: Child[] = [];
  let group = '';

  beforeAll(async () => {
    fixture = await bundleFixture(`${ROOT}/test/node/scaleout/fixtures/scaleOutMember.ts`);
  }, 60_000);
  afterEach(async () => {
    await killChildren(children);
    const nc = await connect({ servers: NATS });
    const jsm = await jetstreamManager(nc);
    for (const bucket of [`${group}-leases`, `${group}-commits`]) await jsm.streams.delete(`KV_${bucket}`).catch(() => undefined);
    await nc.close();
  });
  afterAll(async () => {
    await fixture?.remove();
  });

  const start = (member: string, mode: '' | 'commit' = ''): Child => {
    const child = spawn(process.execPath, [fixture.file, NATS, group, member, String(GROUPS), String(LEASE), mode], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const { lines, waitFor } = childLines(child);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const handle: Child = {
      process: child,
      lines,
      waitFor,
      owned: () => JSON.parse(lines.filter((line) => line.startsWith('owned ')).at(-1)?.slice(6) ?? '[]') as number[],
      exited,
    };
    children.push(handle);
    return handle;
  };
  /**
   * Resolves once the child's key groups are exactly `expected` (it printed them so), from now on: a member may own
   * them for a moment at the start, before the others registered.
   */
  const owns = (child: Child, expected: readonly number[], from = child.lines.length) => child.waitFor((line) => line === `owned ${JSON.stringify(expected)}`, from);
  /** The token a child took a key group with (its last `took` line for it). */
  const tookToken = (child: Child, kg: number) => Number(child.lines.filter((line) => line.startsWith(`took ${kg} `)).at(-1)!.split(' ')[2]);
  const accepted = (child: Child, kg: number) => child.lines.filter((line) => line.startsWith(`accepted ${kg} `)).map((line) => Number(line.split(' ')[2]));

  it('hands over only the key groups a joining member wins, each member owning what every member computes', { timeout: 120_000 }, async () => {
    group = `weir-test-join-${randomBytes(4).toString('hex')}`;
    const a = start('m-a');
    await owns(a, all);
    const b = start('m-b');
    await Promise.all([owns(a, assignedKeyGroups('m-a', ['m-a', 'm-b'], GROUPS)), owns(b, assignedKeyGroups('m-b', ['m-a', 'm-b'], GROUPS))]);
    const c = start('m-c');
    const three = ['m-a', 'm-b', 'm-c'];
    await Promise.all([a, b, c].map((child, i) => owns(child, assignedKeyGroups(three[i]!, three, GROUPS))));
    // Sticky: a and b only lost key groups (to c), never traded them between themselves.
    const aHistory = a.lines.filter((line) => line.startsWith('took ')).length;
    const bHistory = b.lines.filter((line) => line.startsWith('took ')).length;
    expect(aHistory).toBe(GROUPS);
    expect(bHistory).toBe(assignedKeyGroups('m-b', ['m-a', 'm-b'], GROUPS).length);
  });

  it('leaves no consumer behind on the server round after round (only its watch of the leases)', { timeout: 120_000 }, async () => {
    group = `weir-test-rounds-${randomBytes(4).toString('hex')}`;
    const a = start('m-a');
    await owns(a, all);
    const nc = await connect({ servers: NATS });
    try {
      const leases = await new Kvm(nc).open(`${group}-leases`);
      // Five heartbeats: five rounds, each of which read the live members.
      const seen = new Set<number>();
      while (seen.size < 5) {
        const entry = await leases.get('members.m-a');
        if (entry !== null) seen.add(entry.revision);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // Reading the members by `keys()` opened a consumer per round, each kept by the server for five minutes.
      const { state } = await (await jetstreamManager(nc)).streams.info(`KV_${group}-leases`);
      expect(state.consumer_count).toBe(1);
    } finally {
      await nc.close();
    }
  });

  it('gives a SIGKILLed owner’s key groups to the survivor once its lease ran out, with a higher fencing token', { timeout: 120_000 }, async () => {
    group = `weir-test-kill-${randomBytes(4).toString('hex')}`;
    const a = start('m-a', 'commit');
    const b = start('m-b', 'commit');
    const mine = assignedKeyGroups('m-a', ['m-a', 'm-b'], GROUPS);
    await Promise.all([owns(a, mine), owns(b, assignedKeyGroups('m-b', ['m-a', 'm-b'], GROUPS))]);
    await a.waitFor((line) => line.startsWith(`accepted ${mine[0]} `));
    a.process.kill('SIGKILL');
    await a.exited;
    const before = b.lines.length;
    await owns(b, all, before);
    // b prints what it took before it commits on it.
    for (const kg of mine) await b.waitFor((line) => line.startsWith(`accepted ${kg} `), before);
    for (const kg of mine) {
      const before = accepted(a, kg);
      expect(tookToken(b, kg)).toBeGreaterThan(Math.max(0, ...before));
    }
  });

  it('fences an owner SIGSTOPped past its lease: resumed, its writes are refused and it stops with OwnershipLostError', { timeout: 120_000 }, async () => {
    group = `weir-test-stop-${randomBytes(4).toString('hex')}`;
    const a = start('m-a', 'commit');
    const b = start('m-b', 'commit');
    const mine = assignedKeyGroups('m-a', ['m-a', 'm-b'], GROUPS);
    await Promise.all([owns(a, mine), owns(b, assignedKeyGroups('m-b', ['m-a', 'm-b'], GROUPS))]);
    await a.waitFor((line) => line.startsWith(`accepted ${mine.at(-1)} `));
    a.process.kill('SIGSTOP');
    const before = b.lines.length;
    await owns(b, all, before);
    // b commits on a's former key groups before a wakes, so that a's stale writes meet a moved record.
    for (const kg of mine) await b.waitFor((line) => line.startsWith(`accepted ${kg} `), before);
    a.process.kill('SIGCONT');
    const fenced = await a.waitFor((line) => line.startsWith('fenced '));
    expect(fenced).toMatch(/lost key group \d+/);
    expect(await a.exited).toBe(3);
    // Nothing a wrote after b took a key group was accepted: every token a saw accepted precedes b's takeover.
    for (const kg of mine) expect(Math.max(0, ...accepted(a, kg))).toBeLessThan(tookToken(b, kg));
    // And the commit records hold b's writes.
    const reader = await joinScaleOut({ servers: NATS, group, member: 'reader', maxParallelism: GROUPS, lease: LEASE });
    try {
      for (const kg of mine) expect(await reader.committed(kg)).toMatchObject({ round: expect.any(Number) });
    } finally {
      await reader.leave();
    }
  });
});

describe('joinScaleOut', () => {
  it('rejects bad options with JobDefinitionError naming them', async () => {
    await expect(joinScaleOut({ servers: NATS, group: 'a.b', member: 'm' })).rejects.toThrow(JobDefinitionError);
    await expect(joinScaleOut({ servers: NATS, group: 'g', member: 'm.1' })).rejects.toThrow(/member/);
    await expect(joinScaleOut({ servers: NATS, group: 'g', member: 'm', lease: 10 })).rejects.toThrow(/lease/);
  });

  it.skipIf(!up)('refuses a commit on a key group it does not own, and a lease unlike the group’s', { timeout: 60_000 }, async () => {
    const group = `weir-test-solo-${randomBytes(4).toString('hex')}`;
    const solo = await joinScaleOut({ servers: NATS, group, member: 'solo', maxParallelism: 4, lease: LEASE });
    try {
      expect(solo.owned()).toEqual([0, 1, 2, 3]);
      expect(solo.members()).toEqual(['solo']);
      const token = await solo.commit(2, { offset: 7 });
      expect(token).toBe(solo.token(2));
      expect(await solo.committed(2)).toEqual({ offset: 7 });
      await expect(solo.commit(4, {})).rejects.toThrow(OwnershipLostError);
      await expect(joinScaleOut({ servers: NATS, group, member: 'other', maxParallelism: 4, lease: LEASE + 1000 })).rejects.toThrow(/lease is 4000 ms/);
    } finally {
      await solo.leave();
      await solo.done;
      const nc = await connect({ servers: NATS });
      const jsm = await jetstreamManager(nc);
      for (const bucket of [`${group}-leases`, `${group}-commits`]) await jsm.streams.delete(`KV_${bucket}`).catch(() => undefined);
      await nc.close();
    }
  });
});

describe.skipIf(!NATS_SERVER_BINARY)('a scale-out member without its server', () => {
  let server: PrivateNatsServer | undefined;
  afterEach(async () => {
    await server?.remove();
    server = undefined;
  });

  it('stops itself with OwnershipLostError once it could not renew its leases for a whole lease', { timeout: 120_000 }, async () => {
    server = await privateNatsServer('scaleout-outage');
    const changes: number[][] = [];
    const member = await joinScaleOut({
      servers: server.servers,
      connection: { waitOnFirstConnect: true, reconnectTimeWait: 100 },
      group: 'outage',
      member: 'm-a',
      maxParallelism: 4,
      lease: 2000,
      onChange: (owned) => changes.push([...owned]),
    });
    expect(member.owned()).toEqual([0, 1, 2, 3]);
    await server.kill();
    await expect(member.done).rejects.toThrow(OwnershipLostError);
    await expect(member.done).rejects.toThrow(/could not renew its leases for 2000 ms/);
    expect(member.owned()).toEqual([]);
    expect(changes.at(-1)).toEqual([]);
    await expect(member.commit(0, {})).rejects.toThrow(OwnershipLostError);
  });

  it('a member that owns nothing goes on through an outage longer than its lease, and claims once the server is back', { timeout: 120_000 }, async () => {
    server = await privateNatsServer('scaleout-idle-outage');
    // One key group: the member that loses it by rendezvous joins second and owns nothing.
    const names = ['m-a', 'm-b'];
    const owner = rendezvousOwner(0, names)!;
    const idleName = names.find((name) => name !== owner)!;
    const options = { servers: server.servers, connection: { waitOnFirstConnect: true, reconnectTimeWait: 100 }, group: 'idle-outage', maxParallelism: 1, lease: 2000 };
    const holder = await joinScaleOut({ ...options, member: owner });
    const idle = await joinScaleOut({ ...options, member: idleName });
    try {
      expect(holder.owned()).toEqual([0]);
      expect(idle.owned()).toEqual([]);
      await server.kill();
      // The holder could not renew for a lease and stopped; the idle member had nothing to fence, so it keeps trying.
      await expect(holder.done).rejects.toThrow(OwnershipLostError);
      await new Promise((resolve) => setTimeout(resolve, 3000));
      server.start();
      const deadline = Date.now() + 60_000;
      while (idle.owned().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(idle.owned()).toEqual([0]);
      expect(idle.members()).toEqual([idleName]);
    } finally {
      await idle.leave();
      await holder.leave();
    }
  });
});
