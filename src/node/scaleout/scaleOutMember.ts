import { ConnectorError, JobDefinitionError, OwnershipLostError } from '../../core/errors.js';
import { DEFAULT_MAX_PARALLELISM } from '../../core/keyGroups.js';
import type { Json } from '../../core/types.js';
import { lazyNatsConnection, natsKv, type NatsConnectOptions } from '../connectors/nats/natsConnection.js';
import { kvEntries } from './kvEntries.js';
import { parseSavepointRequest, SAVEPOINT_REQUEST_KEY, savepointAnswerKey, type SavepointAnswer, type SavepointRequest } from './groupSavepoint.js';
import { isRevisionConflict, tryCreate } from './kvFencing.js';
import { watchLeaseExpiries, type LeaseExpiries } from './leaseExpiries.js';
import { assignedKeyGroups } from './rendezvousAssignment.js';

export interface ScaleOutMemberOptions {
  /** The NATS servers, e.g. `'127.0.0.1:4222'`. */
  servers: string | string[];
  /** Everything else the client takes to connect (user, pass, token, tls…): used, never logged. */
  connection?: Omit<NatsConnectOptions, 'servers'>;
  /**
   * The group's name: its KV buckets are `<group>-leases` (members' heartbeats and key-group leases, expiring after
   * `lease`) and `<group>-commits` (what each key group's owner committed, fenced; kept).
   */
  group: string;
  /** This member's id, unique in the group (one per process): letters, digits, `-`, `_`, `=`. */
  member: string;
  /** The job's number of key groups; 128 by default. Every member of a group must give the same. */
  maxParallelism?: number;
  /**
   * How long a member's heartbeat and claims live without renewal, in ms (10 000 by default): the longest a dead
   * member's key groups wait for a new owner. Every member of a group must give the same; it is the bucket's TTL.
   */
  lease?: number;
  /** Called with the key groups this member owns (ascending) whenever they change. */
  onChange?: (owned: readonly number[]) => void;
  /**
   * Called when this member is to give a key group up (the assignment moved it, or the member leaves), while it still
   * holds it: commits are accepted and the lease is renewed until this settles, and only then is the lease deleted
   * for the new owner to claim (cooperative rebalancing: a runner stops the key group's task with a final checkpoint
   * and commits it here). Without it, a key group is given up at once.
   */
  release?: (keyGroup: number) => Promise<void>;
  /**
   * Called once per group savepoint asked for (`scaleOutSavepoint`) that this member sees before its deadline; the
   * request is read at every round (a quarter lease), and the runner answers per key group with `answerSavepoint`.
   */
  onSavepointRequest?: (request: SavepointRequest) => void;
}

/** One process's membership of a scale-out group: the key groups it owns, and fenced writes on them. */
export interface ScaleOutMember {
  readonly id: string;
  /** The key groups this member holds (ascending). */
  owned(): readonly number[];
  /** The live members it read last (sorted). */
  members(): readonly string[];
  /** A key group's fencing token: the revision of its owner's last accepted write; undefined when not owned. */
  token(keyGroup: number): number | undefined;
  /** What the key group's owners committed last (this member or the one before it), or undefined. */
  committed(keyGroup: number): Promise<Json | undefined>;
  /**
   * A fenced write: commits `value` for a key group this member owns, accepted only if nobody took the key group
   * since this member's last accepted write. Refused, the member stops and this rejects with `OwnershipLostError`,
   * as does `done`. Resolves to the new fencing token.
   */
  commit(keyGroup: number, value: Json): Promise<number>;
  /**
   * Leaves the group, handing every key group over (through `release`, then its lease deleted) rather than letting
   * them expire; settles once the member stopped.
   */
  leave(): Promise<void>;
  /** Settles when the member left; rejects with `OwnershipLostError` when it was fenced and stopped itself. */
  readonly done: Promise<void>;
  /** The group savepoint asked for now (its deadline not passed), read from the server; undefined when none. */
  savepointRequest(): Promise<SavepointRequest | undefined>;
  /** Whether a key group was answered for in a group savepoint (by any member). */
  savepointAnswered(id: string, keyGroup: number): Promise<boolean>;
  /** How many key groups were answered for in a group savepoint. */
  savepointAnswers(id: string): Promise<number>;
  /** Answers a group savepoint for a key group: false when another member answered first (the first answer counts). */
  answerSavepoint(id: string, keyGroup: number, answer: SavepointAnswer): Promise<boolean>;
}

/** How long a member's heartbeat and claims live without renewal by default, in ms. */
export const DEFAULT_LEASE = 10_000;
/** How long after a lease's expected expiry a member looks, and looks again while the server still holds it. */
const EXPIRY_MARGIN = 20;
const EXPIRY_RETRY = 50;

/** A key group's lease and commit record: who owns it, and since which revision. */
type Held = { lease: number; token: number };

/**
 * Joins a scale-out group on JetStream KV (Kafka Streams' consumer group, with no coordinator of weir's own): the
 * member heartbeats into `<group>-leases`, reads the live members back (by polling: expiry by the bucket's TTL sends
 * no watch event; a watch of the writes tells when each heartbeat and lease is due to run out, and the next round
 * runs right then: see `watchLeaseExpiries`), computes the same sticky assignment of key groups as every other
 * member (rendezvous hashing), and claims its key groups by `create` on their lease keys, releasing those it no longer wins. A claim then bumps the key
 * group's commit record by compare-and-set: that revision is the fencing token, and a former owner that was paused
 * past its lease has its next `commit` refused, and stops itself with `OwnershipLostError`.
 * @example
 * const member = await joinScaleOut({ servers: '127.0.0.1:4222', group: 'orders', member: `p${process.pid}` });
 * for (const kg of member.owned()) await member.commit(kg, { offset: 42 });
 */
export async function joinScaleOut(options: ScaleOutMemberOptions): Promise<ScaleOutMember> {
  const { servers, connection: connectOptions, group, member, maxParallelism = DEFAULT_MAX_PARALLELISM, lease = DEFAULT_LEASE, onChange, release, onSavepointRequest } = options;
  const who = `scale-out member '${String(member)}' of group '${String(group)}'`;
  if (typeof group !== 'string' || !/^[-\w]+$/.test(group)) throw new JobDefinitionError(`${who}: group must be a name of letters, digits, '-' and '_'`);
  if (typeof member !== 'string' || !/^[-\w=]+$/.test(member)) throw new JobDefinitionError(`${who}: member must be an id of letters, digits, '-', '_' and '='`);
  if (!(Number.isInteger(maxParallelism) && maxParallelism >= 1)) throw new JobDefinitionError(`${who}: maxParallelism must be an integer ≥ 1, got ${String(maxParallelism)}`);
  if (!(Number.isFinite(lease) && lease >= 1000)) throw new JobDefinitionError(`${who}: lease must be at least 1000 ms, got ${String(lease)}`);

  const connection = lazyNatsConnection({ ...connectOptions, servers });
  const { connection: nc, jsm } = await connection.get().catch((cause: unknown) => {
    throw new ConnectorError(`${who}: cannot connect to NATS: ${String(cause)}`, { cause });
  });
  const { Kvm } = await natsKv.load();
  const kvm = new Kvm(nc);
  const leases = await kvm.create(`${group}-leases`, { ttl: lease, history: 1 });
  const commits = await kvm.create(`${group}-commits`, { history: 1 });
  const ttl = (await leases.status()).ttl;
  if (ttl !== lease) {
    await connection.close();
    throw new JobDefinitionError(`${who}: the group's lease is ${ttl} ms and this member asks for ${lease} ms; every member of a group must give the same lease`);
  }

  const held = new Map<number, Held>();
  let live: string[] = [];
  // Key groups assigned to this member that another still holds: their leases are the ones worth watching.
  let wanted: number[] = [];
  let lastRenewal = Date.now();
  let stopped = false;
  // Leaving: no heartbeat, nothing assigned, every key group released; the member stops once it holds none.
  let leaving = false;
  let timer: NodeJS.Timeout | undefined;
  // A round is under way; `rerun`: a release finished meanwhile, so the next round starts at once.
  let inRound = false;
  let rerun = false;
  // Key groups being given up: `done` once `release` settled, when the next round deletes the lease.
  const releasing = new Map<number, { done: boolean }>();
  let settle!: (error?: OwnershipLostError) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (error) => (error === undefined ? resolve() : reject(error));
  });
  done.catch(() => undefined);
  const owned = () => [...held.keys()].sort((a, b) => a - b);
  // The group savepoint requests already passed on to `onSavepointRequest`, by id.
  const seenRequests = new Set<string>();
  const savepointRequest = async (): Promise<SavepointRequest | undefined> => {
    const entry = await commits.get(SAVEPOINT_REQUEST_KEY);
    const request = entry === null || entry.operation !== 'PUT' ? undefined : parseSavepointRequest(entry.json());
    return request !== undefined && request.deadline > Date.now() ? request : undefined;
  };
  const leasesBucket = { kv: leases, name: `${group}-leases`, jsm };
  const commitsBucket = { kv: commits, name: `${group}-commits`, jsm };
  /** The members whose heartbeat the server holds (a member that left deleted its own). */
  const liveMembers = async (): Promise<string[]> => [...(await kvEntries(leasesBucket, 'members.*')).keys()].map((key) => key.slice('members.'.length));
  // Set once the leases bucket is watched (before the first round).
  let expiries: LeaseExpiries | undefined;

  /** Stops the member: it writes nothing more; `done` settles with the reason. */
  const stop = async (error?: OwnershipLostError): Promise<void> => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    await finish(error);
  };
  /** Gives the key groups and the connection up, and settles `done`. */
  const finish = async (error?: OwnershipLostError): Promise<void> => {
    expiries?.stop();
    held.clear();
    onChange?.([]);
    await connection.close().catch(() => undefined);
    settle(error);
  };
  const fence = (keyGroup: number, why: string) => {
    const error = new OwnershipLostError(`${who}: lost key group ${keyGroup}: ${why}; it wrote nothing after the takeover and stopped; start it again to rejoin`);
    void stop(error);
    return error;
  };

  /** Takes a key group whose lease this member just created: bumps its commit record so the former owner is fenced. */
  const takeOver = async (keyGroup: number, leaseRevision: number): Promise<void> => {
    const key = `kg.${keyGroup}`;
    for (;;) {
      const entry = await commits.get(key);
      const previous = entry === null || entry.operation !== 'PUT' ? undefined : (entry.json<{ value?: Json }>().value ?? undefined);
      const record = JSON.stringify({ owner: member, value: previous ?? null });
      try {
        const token = entry === null ? await commits.create(key, record) : await commits.update(key, record, entry.revision);
        held.set(keyGroup, { lease: leaseRevision, token });
        return;
      } catch (error) {
        // The former owner committed between our read and our bump: read again; its next commit is the one refused.
        if (!isRevisionConflict(error)) throw error;
      }
    }
  };

  /** Runs the next round now rather than a quarter lease from now (once a release settled). */
  const wake = (): void => {
    if (stopped) return;
    if (inRound) {
      rerun = true;
      return;
    }
    clearTimeout(timer);
    timer = setTimeout(() => void loop(), 0);
  };
  /**
   * Milliseconds to the next round: a quarter lease, or sooner, just after the earliest expected expiry of another
   * member (its heartbeat and the key-group leases it holds, renewed in the same round of its: its key groups are then
   * assigned anew and free to claim in one round) or of a lease still held on a key group assigned to this member: a
   * dead member's key groups are taken as its lease runs out, not up to a quarter lease later.
   */
  const nextRound = (): number => {
    const now = Date.now();
    let next = now + lease / 4;
    const memberExpiry = (id: string) => {
      const heartbeat = expiries?.expiresAt(`members.${id}`);
      return heartbeat === undefined ? undefined : Math.max(heartbeat, expiries?.lastExpiryOf(id) ?? heartbeat);
    };
    const due = [...live.filter((id) => id !== member).map(memberExpiry), ...wanted.map((keyGroup) => expiries?.expiresAt(`kg.${keyGroup}`))];
    for (const at of due) {
      // Overdue by more than a quarter lease: the watch missed the renewals (it broke meanwhile) and tells nothing.
      if (at === undefined || at < now - lease / 4) continue;
      next = Math.min(next, Math.max(at + EXPIRY_MARGIN, now + EXPIRY_RETRY));
    }
    return next - now;
  };
  /** A heartbeat or lease deleted (a member left, a key group was handed over): a round claims what it freed now. */
  const onDelete = (key: string): void => {
    if (key.startsWith('members.') ? key !== `members.${member}` : wanted.includes(Number(key.slice('kg.'.length)))) wake();
  };

  /** Starts giving a key group up: `release` runs while the rounds keep renewing its lease. */
  const startRelease = (keyGroup: number): { done: boolean } => {
    const handing = { done: release === undefined };
    releasing.set(keyGroup, handing);
    if (release !== undefined) {
      void release(keyGroup)
        .catch(() => undefined)
        .then(() => {
          handing.done = true;
          wake();
        });
    }
    return handing;
  };

  /** One round: heartbeat, read the live members, renew or release what is held, claim what is assigned. */
  const tick = async (): Promise<void> => {
    if (!leaving) {
      await leases.put(`members.${member}`, String(Date.now()));
      live = await liveMembers();
      if (!live.includes(member)) live = [...live, member].sort();
    }
    const assigned = new Set(leaving ? [] : assignedKeyGroups(member, live, maxParallelism));
    const before = owned().join();
    if (stopped) return;
    // Every held lease at once: each write is fenced by its own key's revision, so their order does not matter, and a
    // member holding many key groups renews in about one round trip, not one per key group (on a loaded machine, one
    // event-loop turn each: a busy member then renewed too late and was fenced). All settle before the round goes on,
    // so no renewal is still in flight with an old revision when the next round writes.
    const renewals = await Promise.allSettled(
      [...held].map(async ([keyGroup, mine]) => {
        const key = `kg.${keyGroup}`;
        // A release once started runs to its end, even if the key group comes back meanwhile: it is claimed again.
        if (!assigned.has(keyGroup) || releasing.has(keyGroup)) {
          if ((releasing.get(keyGroup) ?? startRelease(keyGroup)).done) {
            // Cooperative hand-over: the lease is deleted, so the new owner claims it at its next round.
            releasing.delete(keyGroup);
            held.delete(keyGroup);
            await leases.delete(key, { previousSeq: mine.lease }).catch(() => undefined);
            return;
          }
        }
        try {
          // In place: a commit running meanwhile moves the token of the same record.
          mine.lease = await leases.update(key, member, mine.lease);
        } catch (error) {
          if (!isRevisionConflict(error)) throw error;
          throw fence(keyGroup, 'its lease ran out and another member claimed it');
        }
      }),
    );
    const failed = renewals.find((renewal) => renewal.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    if (stopped) return;
    lastRenewal = Date.now();
    const stillHeld: number[] = [];
    for (const keyGroup of assigned) {
      if (stopped) return;
      if (held.has(keyGroup) || releasing.has(keyGroup)) continue;
      const revision = await tryCreate(leases, `kg.${keyGroup}`, member);
      if (revision !== undefined) await takeOver(keyGroup, revision);
      else stillHeld.push(keyGroup);
    }
    wanted = stillHeld;
    if (owned().join() !== before) onChange?.(owned());
    if (onSavepointRequest !== undefined && !leaving) {
      const request = await savepointRequest();
      if (request !== undefined && !seenRequests.has(request.id)) {
        seenRequests.add(request.id);
        onSavepointRequest(request);
      }
    }
  };

  const loop = async (): Promise<void> => {
    try {
      inRound = true;
      await tick();
    } catch (error) {
      if (stopped) return;
      if (error instanceof OwnershipLostError) return;
      // The server did not answer: held leases may have run out meanwhile, so a member that could not renew for a
      // whole lease stops rather than write on key groups that may be someone else's. One that holds none has nothing
      // to fence: it goes on with its rounds, else it would stay joined and idle for good once the server answers.
      const lost = owned();
      if (Date.now() - lastRenewal >= lease && lost.length > 0) {
        void fence(lost[0]!, `it could not renew its leases for ${lease} ms (${String((error as Error)?.message ?? error)})`);
        return;
      }
    } finally {
      inRound = false;
    }
    if (stopped) return;
    if (leaving && held.size === 0) {
      stopped = true;
      await finish();
      return;
    }
    timer = setTimeout(() => void loop(), rerun ? 0 : nextRound());
    rerun = false;
  };
  // The first round runs as a round does: a delete seen meanwhile asks for the next one at once (`rerun`).
  inRound = true;
  await (async () => {
    // Without a watch (a user allowed no consumers, say), rounds run every quarter lease, as they always may.
    expiries = await watchLeaseExpiries(leases, lease, onDelete).catch(() => undefined);
    await tick();
  })().catch(async (cause: unknown) => {
    await stop();
    throw new ConnectorError(`${who}: cannot join: ${String((cause as Error)?.message ?? cause)}`, { cause });
  });
  inRound = false;
  if (held.size > 0) onChange?.(owned());
  timer = setTimeout(() => void loop(), rerun ? 0 : nextRound());
  rerun = false;

  return {
    id: member,
    owned,
    members: () => live,
    token: (keyGroup) => held.get(keyGroup)?.token,
    async committed(keyGroup) {
      const entry = await commits.get(`kg.${keyGroup}`);
      if (entry === null || entry.operation !== 'PUT') return undefined;
      return entry.json<{ value: Json }>().value ?? undefined;
    },
    async commit(keyGroup, value) {
      const mine = held.get(keyGroup);
      if (stopped || mine === undefined) throw new OwnershipLostError(`${who}: does not own key group ${keyGroup} (it owns ${owned().join(', ') || 'none'}); commit only on owned key groups`);
      try {
        const token = await commits.update(`kg.${keyGroup}`, JSON.stringify({ owner: member, value }), mine.token);
        if (held.get(keyGroup) === mine) mine.token = token;
        return token;
      } catch (error) {
        if (isRevisionConflict(error)) throw fence(keyGroup, `another member took it over (its write with token ${mine.token} was refused)`);
        throw new ConnectorError(`${who}: cannot commit key group ${keyGroup}: ${String((error as Error)?.message ?? error)}`, { cause: error });
      }
    },
    async leave() {
      if (!stopped && !leaving) {
        leaving = true;
        // The heartbeat goes first, so the other members assign this one's key groups and claim each as it is freed.
        await leases.delete(`members.${member}`).catch(() => undefined);
        wake();
      }
      await done.catch(() => undefined);
    },
    done,
    savepointRequest,
    async savepointAnswered(id, keyGroup) {
      const entry = await commits.get(savepointAnswerKey(id, keyGroup));
      return entry !== null && entry.operation === 'PUT';
    },
    async savepointAnswers(id) {
      return (await kvEntries(commitsBucket, savepointAnswerKey(id, '*'))).size;
    },
    async answerSavepoint(id, keyGroup, answer) {
      return (await tryCreate(commits, savepointAnswerKey(id, keyGroup), JSON.stringify(answer))) !== undefined;
    },
  };
}
