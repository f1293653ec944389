import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { DEFAULT_MAX_PARALLELISM } from 'weir';
import { assignedKeyGroups, joinScaleOut, type ScaleOutMember } from 'weir/node';
import type { Result } from './report';

// Scale-out on NATS JetStream KV (README "Beyond one machine"). `scaleout/rebalance-moved-fraction`: two members own
// the job's 128 key groups; a third joins; the fraction of key groups whose owner changed once all three settled,
// read from what each member actually claimed on the server (bar ≤ 0.4; rendezvous hashing gives ~1/3).
// `scaleout/rebalance-settle-ms`: from the third member's join to all three owning what they compute, a wall-clock
// figure of the lease rounds (a quarter of the 2 s lease each): read it with the machine's load beside it.

const SERVERS = process.env.BENCH_NATS ?? '127.0.0.1:4222';
const LEASE = 2000;

/** Resolves once every member owns exactly what the assignment gives it among all of them. */
function settled(members: { member: ScaleOutMember; changed: EventTarget }[]): Promise<void> {
  const ids = members.map(({ member }) => member.id);
  const done = () => members.every(({ member }) => member.owned().join() === assignedKeyGroups(member.id, ids, DEFAULT_MAX_PARALLELISM).join());
  return new Promise((resolve) => {
    const check = () => {
      if (!done()) return;
      for (const { changed } of members) changed.removeEventListener('change', check);
      resolve();
    };
    for (const { changed } of members) changed.addEventListener('change', check);
    check();
  });
}

export async function scaleout(): Promise<Result[]> {
  const group = `weir-bench-scaleout-${randomBytes(4).toString('hex')}`;
  const join = async (id: string) => {
    const changed = new EventTarget();
    const member = await joinScaleOut({ servers: SERVERS, group, member: id, lease: LEASE, onChange: () => changed.dispatchEvent(new Event('change')) });
    return { member, changed };
  };
  const members = [await join('m-a'), await join('m-b')];
  try {
    await settled(members);
    const before = new Map<number, string>();
    for (const { member } of members) for (const kg of member.owned()) before.set(kg, member.id);
    const joinedAt = performance.now();
    members.push(await join('m-c'));
    await settled(members);
    const settleMs = performance.now() - joinedAt;
    let moved = 0;
    for (const { member } of members) for (const kg of member.owned()) if (before.get(kg) !== member.id) moved++;
    return [
      { name: 'scaleout/rebalance-moved-fraction', value: moved / DEFAULT_MAX_PARALLELISM, unit: 'ratio', bar: { op: '<=', value: 0.4 } },
      { name: 'scaleout/rebalance-settle-ms', value: settleMs, unit: 'ms' },
    ];
  } finally {
    for (const { member } of members) await member.leave();
    const nc = await connect({ servers: SERVERS });
    const jsm = await jetstreamManager(nc);
    for (const bucket of [`${group}-leases`, `${group}-commits`]) await jsm.streams.delete(`KV_${bucket}`).catch(() => undefined);
    await nc.close();
  }
}
