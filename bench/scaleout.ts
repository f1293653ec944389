import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_MAX_PARALLELISM } from 'weir';
import { assignedKeyGroups, joinScaleOut, keyGroupPartitions, NATS_BATCH_HEADER, natsBatchPayload, type ScaleOutMember } from 'weir/node';
import type { Result } from './report';
import { childLines } from '../test/support/childLines';

// Scale-out on NATS JetStream KV (README "Beyond one machine"). `scaleout/rebalance-moved-fraction`: two members own
// the job's 128 key groups; a third joins; the fraction of key groups whose owner changed once all three settled,
// read from what each member actually claimed on the server (bar ≤ 0.4; rendezvous hashing gives ~1/3).
// `scaleout/rebalance-settle-ms`: from the third member's join to all three owning what they compute, a wall-clock
// figure of the lease rounds (a quarter of the 2 s lease each): read it with the machine's load beside it.
// `scaleout/2-vs-1-processes`: records/s of a runScaleOut job over a 16-partition stream, ~2 µs of busy work per
// record (bench/scaleoutMember.ts), with two member processes over one (bar ≥ 1.5): every record is stored before
// the members start, and they are let into the members' stream once the members settled (see `throughput`). The
// records are published in batches of up to BATCH per message and key-group subject (the `Weir-Batch` format
// `toNats({ batch })` writes; before, one message per record), and the members read them record by record: the same
// records and the same work per record, with the server's per-message work spread over a batch. `scaleout/takeover-ms-after-sigkill`: two members run; one is SIGKILLed and a record
// is published to each of its key groups; from the kill to the last of those key groups' first record at the
// survivor, recorded with its parts: the lease TTL, and the restore time (from the survivor's claim of a key group to
// its first record there, the slowest key group's). Bar: ≤ lease + 2 × restore.

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

/** `BENCH_SCALEOUT=takeover` (or `rebalance`, `processes`, comma-separated) runs only those parts; all by default. */
const PARTS = (process.env.BENCH_SCALEOUT ?? 'rebalance,processes,takeover').split(',');

export async function scaleout(): Promise<Result[]> {
  const results: Result[] = [];
  if (PARTS.includes('rebalance')) results.push(...(await rebalance()));
  if (PARTS.includes('processes')) results.push(...(await processesRatio()));
  if (PARTS.includes('takeover')) results.push(...(await takeover()));
  return results;
}

async function rebalance(): Promise<Result[]> {
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

const PARTITIONS = 16;
const RECORDS = Number(process.env.BENCH_SCALEOUT_RECORDS ?? 1_000_000);
const TAKEOVER_LEASE = 3000;
const MEMBER = fileURLToPath(new URL('./scaleoutMember.ts', import.meta.url));

/** A member process of bench/scaleoutMember.ts and what it printed. */
interface Member {
  readonly name: string;
  readonly process: ChildProcess;
  readonly lines: string[];
  /** Resolves once a line from `from` on matches. */
  waitFor(match: (line: string) => boolean, from?: number): Promise<string>;
  processed(): number;
  /** The key groups its tasks run on now. */
  running(): Set<number>;
  readonly exited: Promise<unknown>;
}

/** A scale-out group of member processes over a stream of its own, removed by `close`. */
async function benchGroup(lease: number) {
  const id = randomBytes(4).toString('hex');
  const group = `weir-bench-so-${id}`;
  const bucket = `weir-bench-so-chk-${id}`;
  const stream = `wbso_${id}`;
  const nc = await connect({ servers: SERVERS });
  const jsm = await jetstreamManager(nc);
  // Records are published to `<stream>_in`; the members read `<stream>`, which takes them over from it (a stream
  // source, copied inside the server) once `flow()` is called: so a measurement can start with every record stored
  // and every member settled, none of them ahead.
  // Until then it sources an empty stream: a stream with a source lets consumers filter on subjects it does not take in.
  const input = `${stream}_in`;
  const gate = `${stream}_gate`;
  await jsm.streams.add({ name: input, subjects: [`${stream}.>`] });
  await jsm.streams.add({ name: gate, subjects: [gate] });
  await jsm.streams.add({ name: stream, subjects: [`${stream}_unused`], sources: [{ name: gate }] });
  const members: Member[] = [];
  const start = (name: string): Member => {
    const child = spawn(process.execPath, ['--import', 'tsx', MEMBER, SERVERS, group, name, String(PARTITIONS), String(lease), stream, bucket], { stdio: ['ignore', 'pipe', 'inherit'] });
    const { lines, waitFor } = childLines(child);
    const member: Member = {
      name,
      process: child,
      lines,
      waitFor,
      processed: () => Number(lines.filter((line) => line.startsWith('processed ')).at(-1)?.slice(10) ?? 0),
      running() {
        const running = new Set<number>();
        for (const line of lines) {
          const [event, kg] = line.split(' ');
          if (event === 'start') running.add(Number(kg));
          if (event === 'end') running.delete(Number(kg));
        }
        return running;
      },
      exited: new Promise((resolve) => child.on('exit', resolve)),
    };
    members.push(member);
    return member;
  };
  const topic = keyGroupPartitions({ prefix: stream, topic: 'in', maxParallelism: PARTITIONS });
  return {
    stream,
    topic,
    nc,
    members,
    start,
    /** Resolves once each member's tasks run on exactly the key groups the assignment gives it among `names`. */
    async settled(names: string[]) {
      const live = members.filter((member) => names.includes(member.name) && member.process.exitCode === null);
      const done = () => live.every((member) => [...member.running()].sort((a, b) => a - b).join() === assignedKeyGroups(member.name, names, PARTITIONS).join());
      while (!done()) await sleep(100);
    },
    /** How many messages were stored. */
    stored: async () => (await jsm.streams.info(input)).state.messages,
    /** Lets the published records, and any published later, into the stream the members read. */
    flow: () => jsm.streams.update(stream, { sources: [{ name: input }] }),
    async close() {
      for (const member of members) if (member.process.exitCode === null && member.process.signalCode === null) member.process.kill('SIGKILL');
      await Promise.all(members.map((member) => member.exited));
      for (const name of [stream, input, gate, `KV_${group}-leases`, `KV_${group}-commits`, `OBJ_${bucket}`]) await jsm.streams.delete(name).catch(() => undefined);
      await nc.close();
    },
  };
}

/** A member that ended during a measurement (fenced, say) fails the bench rather than stalling it. */
function checkAlive(members: readonly Member[]): void {
  const gone = members.find((member) => member.process.exitCode !== null || member.process.signalCode !== null);
  if (gone) throw new Error(`scaleout bench: member ${gone.name} ended: ${gone.lines.filter((line) => !line.startsWith('processed ')).slice(-3).join(' | ')}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Records per message at most, per key-group subject: toNats's default `batch.maxRecords`. */
const BATCH = Number(process.env.BENCH_SCALEOUT_BATCH ?? 1000);

/**
 * Publishes `count` records over every partition with core publishes (the stream stores them without acks), up to
 * BATCH records per message and subject, as `toNats({ batch })` packs a checkpoint's records; returns how many
 * messages that made.
 */
async function publishRecords(nc: NatsConnection, subjectOf: (user: string) => string, count: number): Promise<number> {
  const open = new Map<string, string[]>();
  let messages = 0;
  const send = (subject: string, payloads: string[]) => {
    if (payloads.length === 1) {
      nc.publish(subject, payloads[0]!);
    } else {
      const batch = headers();
      batch.set(NATS_BATCH_HEADER, String(payloads.length));
      nc.publish(subject, natsBatchPayload(payloads), { headers: batch });
    }
    messages++;
  };
  for (let i = 0; i < count; i++) {
    const user = `u${i % 1000}`;
    const subject = subjectOf(user);
    let payloads = open.get(subject);
    if (payloads === undefined) open.set(subject, (payloads = []));
    payloads.push(JSON.stringify({ user }));
    if (payloads.length === BATCH) {
      send(subject, payloads);
      open.delete(subject);
      // About every 5,000 records, as before batches.
      if (messages % Math.ceil(5000 / BATCH) === 0) await nc.flush();
    }
  }
  for (const [subject, payloads] of open) send(subject, payloads);
  await nc.flush();
  return messages;
}

/** CPU time a process used so far in ms, from /proc (Linux); undefined elsewhere or once it is gone. */
function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields 14 and 15 (utime, stime) in clock ticks of 10 ms, after the command name in parentheses.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * The pid of the nats-server the bench uses (the one listening on SERVERS' port: other servers may run beside it), to
 * count its CPU beside the members' (it shares the machine's cores with them). Point BENCH_NATS at a server of the
 * bench's own for a figure that counts no other client's work.
 */
function natsServerPid(): number | undefined {
  const port = SERVERS.split(',')[0]!.split(':').at(-1);
  try {
    const listening = execFileSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' });
    const pid = /pid=(\d+)/.exec(listening)?.[1];
    if (pid !== undefined) return Number(pid);
  } catch {
    // No `ss`: the first nats-server there is.
  }
  try {
    return Number(execFileSync('pidof', ['nats-server'], { encoding: 'utf8' }).trim().split(' ')[0]) || undefined;
  } catch {
    return undefined;
  }
}

interface Throughput {
  readonly recordsPerS: number;
  /** CPU µs per record in the member processes and in nats-server; NaN where /proc cannot tell. */
  readonly membersCpuUs: number;
  readonly serverCpuUs: number;
}

/**
 * Records/s of `processes` member processes reading RECORDS records: they are all published and stored first, the
 * members join and settle, and only then does the stream the members read take them in (`flow`, ~170k records/s
 * inside the server here, above what the members read); timed from then until every record was processed.
 * Publishing is not timed: what is measured is the job, not how fast this process publishes.
 */
async function throughput(processes: number): Promise<Throughput> {
  // The default lease: a loaded machine must not fence a member in the middle of the measurement.
  const group = await benchGroup(10_000);
  try {
    const messages = await publishRecords(group.nc, group.topic.subjectOfKey, RECORDS);
    while ((await group.stored()) < messages) await sleep(50);
    const names = Array.from({ length: processes }, (_, i) => `m-${i}`);
    const members = names.map((name) => group.start(name));
    await Promise.all(members.map((member) => member.waitFor((line) => line === 'joined')));
    await group.settled(names);
    const server = natsServerPid();
    const sample = () => ({
      at: performance.now(),
      processed: members.reduce((sum, member) => sum + member.processed(), 0),
      membersCpu: members.reduce((sum, member) => sum + (cpuMs(member.process.pid) ?? NaN), 0),
      serverCpu: cpuMs(server) ?? NaN,
    });
    const from = sample();
    await group.flow();
    let end = from;
    while (end.processed - from.processed < RECORDS) {
      await sleep(50);
      checkAlive(members);
      end = sample();
    }
    return {
      recordsPerS: RECORDS / ((end.at - from.at) / 1000),
      membersCpuUs: ((end.membersCpu - from.membersCpu) * 1000) / RECORDS,
      serverCpuUs: ((end.serverCpu - from.serverCpu) * 1000) / RECORDS,
    };
  } finally {
    await group.close();
  }
}

async function processesRatio(): Promise<Result[]> {
  const one = await throughput(1);
  const two = await throughput(2);
  return [
    { name: 'scaleout/1-process-records-per-s', value: one.recordsPerS, unit: 'records/s' },
    { name: 'scaleout/2-processes-records-per-s', value: two.recordsPerS, unit: 'records/s' },
    { name: 'scaleout/2-vs-1-processes', value: two.recordsPerS / one.recordsPerS, unit: 'ratio', bar: { op: '>=', value: 1.5 } },
    // Where the 2 cores go: the members' CPU and nats-server's, per record (up to BATCH records per message).
    { name: 'scaleout/1-process-member-cpu-us-per-record', value: one.membersCpuUs, unit: 'µs' },
    { name: 'scaleout/1-process-nats-server-cpu-us-per-record', value: one.serverCpuUs, unit: 'µs' },
    { name: 'scaleout/2-processes-members-cpu-us-per-record', value: two.membersCpuUs, unit: 'µs' },
    { name: 'scaleout/2-processes-nats-server-cpu-us-per-record', value: two.serverCpuUs, unit: 'µs' },
  ];
}

async function takeover(): Promise<Result[]> {
  const group = await benchGroup(TAKEOVER_LEASE);
  try {
    await group.flow();
    const names = ['m-a', 'm-b'];
    const [victim, survivor] = names.map((name) => group.start(name)) as [Member, Member];
    await Promise.all([victim, survivor].map((member) => member.waitFor((line) => line === 'joined')));
    await group.settled(names);
    // Some state and committed checkpoints first.
    await publishRecords(group.nc, group.topic.subjectOfKey, 20_000);
    while (victim.processed() + survivor.processed() < 20_000) {
      await sleep(20);
      checkAlive([victim, survivor]);
    }
    await sleep(1500);
    const lost = [...victim.running()];
    const from = survivor.lines.length;
    victim.process.kill('SIGKILL');
    const killedAt = Date.now();
    for (const kg of lost) group.nc.publish(group.topic.subject(kg), JSON.stringify({ user: 'after-kill' }));
    await group.nc.flush();
    let restoreMs = 0;
    let firstAt = 0;
    let startedAt = 0;
    for (const kg of lost) {
      const started = Number((await survivor.waitFor((line) => line.startsWith(`start ${kg} `), from)).split(' ')[2]);
      const first = Number((await survivor.waitFor((line) => line.startsWith(`first ${kg} `), from)).split(' ')[2]);
      restoreMs = Math.max(restoreMs, first - started);
      firstAt = Math.max(firstAt, first);
      startedAt = Math.max(startedAt, started);
    }
    const takeoverMs = firstAt - killedAt;
    return [
      { name: 'scaleout/takeover-ms-after-sigkill', value: takeoverMs, unit: 'ms', bar: { op: '<=', value: TAKEOVER_LEASE + 2 * restoreMs } },
      { name: 'scaleout/takeover-lease-ms', value: TAKEOVER_LEASE, unit: 'ms' },
      // From the kill to the survivor's last task start: the lease left at the kill (up to a quarter lease less than
      // all of it, the victim renewed that long before) plus how late the survivor noticed it ran out.
      { name: 'scaleout/takeover-claim-ms', value: startedAt - killedAt, unit: 'ms' },
      { name: 'scaleout/takeover-restore-ms', value: restoreMs, unit: 'ms' },
    ];
  } finally {
    await group.close();
  }
}
