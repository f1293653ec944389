/**
 * The lock file that keeps two runs of one job off the same checkpoint directory: `<job>/.lock` holds the owner's
 * pid, host and a random token, and its mtime is the owner's heartbeat. A lock is taken over when its process is
 * gone (same host, `kill(pid, 0)` fails) or its heartbeat is older than `staleMs` (any host), so a process killed
 * with SIGKILL never leaves the directory locked for good. A lock of this very process (and thread) that it no longer
 * holds (a release could not unlink it: the directory had turned read-only, say) is taken over at once, so the next
 * start in the process does not wait for the heartbeat to go stale. Internal: used by `fsCheckpointStorage`.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { threadId } from 'node:worker_threads';
import { dirname } from 'node:path';
import { CheckpointDirectoryLockedError, errorCode } from '../core/errors.js';
import type { CheckpointLock } from '../core/types.js';

export interface FsLockOptions {
  /** A lock whose heartbeat is older than this (ms) is abandoned, whatever its host (30 s by default). */
  staleMs?: number;
  /** How often the holder refreshes its heartbeat (ms; 5 s by default). */
  heartbeatMs?: number;
}

interface LockOwner {
  pid: number;
  /** The worker thread within the process (0: the main thread); absent in locks written before it was recorded. */
  threadId?: number;
  hostname: string;
  token: string;
  since: string;
}

interface Holder {
  owner: LockOwner | undefined;
  /** The raw content, to check that the lock taken over is the one judged abandoned. */
  text: string;
  ageMs: number;
}

/**
 * The tokens of the locks this thread holds, shared through a global by every copy of this module loaded in it (a
 * bundle and its tests, say), so that one copy never takes over a lock another still holds.
 */
const HELD = Symbol.for('weir.fsLock.held');
const held: Set<string> = ((globalThis as { [HELD]?: Set<string> })[HELD] ??= new Set<string>());

/**
 * Takes the lock `file` for `job`, or rejects with `CheckpointDirectoryLockedError` while a live owner holds it.
 * @example const lock = await acquireFsLock('/var/checkpoints/clicks/.lock', 'clicks', {}); await lock.release();
 */
export async function acquireFsLock(file: string, job: string, options: FsLockOptions): Promise<CheckpointLock> {
  const { staleMs = 30_000, heartbeatMs = 5_000 } = options;
  await mkdir(dirname(file), { recursive: true });
  const owner: LockOwner = { pid: process.pid, threadId, hostname: hostname(), token: randomBytes(8).toString('hex'), since: new Date().toISOString() };
  const text = JSON.stringify(owner);
  // The lock is written whole to a temp file and linked into place: `link` fails if the lock exists, so of two
  // processes racing here one wins, and a process killed at any point never leaves a half-written lock.
  const temp = `${file}.${owner.token}.tmp`;
  await writeFile(temp, text);
  for (let attempt = 0; ; attempt++) {
    try {
      await link(temp, file);
      held.add(owner.token);
      await unlink(temp).catch(() => undefined);
      break;
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') {
        await unlink(temp).catch(() => undefined);
        throw error;
      }
      const holder = await readHolder(file);
      if (holder === undefined) continue; // released meanwhile
      const abandoned = attempt < 3 && isAbandoned(holder, staleMs);
      if (!abandoned) {
        await unlink(temp).catch(() => undefined);
        throw lockedError(file, job, holder);
      }
      await takeOver(file, holder, owner.token, job);
    }
  }
  const heartbeat = setInterval(() => {
    ownsLock(file, owner.token)
      .then((owns) => (owns ? touch(file) : undefined))
      .catch(() => undefined);
  }, heartbeatMs);
  heartbeat.unref();
  let released: Promise<void> | undefined;
  return {
    release: () =>
      (released ??= (async () => {
        clearInterval(heartbeat);
        try {
          if (await ownsLock(file, owner.token)) await unlink(file);
        } finally {
          // Even when the unlink failed: the lock left behind is then abandoned, and the next start takes it over.
          held.delete(owner.token);
        }
      })()),
  };
}

async function readHolder(file: string): Promise<Holder | undefined> {
  try {
    const [text, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    return { owner: parseOwner(text), text, ageMs: Date.now() - info.mtimeMs };
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockOwner> | null;
    if (value && Number.isSafeInteger(value.pid) && typeof value.hostname === 'string' && typeof value.token === 'string') return value as LockOwner;
  } catch {
    // Damaged.
  }
  return undefined;
}

function isAbandoned(holder: Holder, staleMs: number): boolean {
  const { owner } = holder;
  // Locks are linked in whole, so one that does not parse is damaged, not being written: nobody holds it.
  if (holder.ageMs > staleMs || owner === undefined) return true;
  if (owner.hostname !== hostname()) return false;
  // This process: abandoned when this thread wrote it and holds it no longer; another thread's is not ours to judge.
  if (owner.pid === process.pid) return (owner.threadId ?? 0) === threadId && !held.has(owner.token);
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return errorCode(error) === 'ESRCH';
  }
}

/**
 * Moves an abandoned lock aside. `rename` is atomic, so of two processes taking over at once only one moves this
 * lock; the other may have moved a fresh one in its place, which it then puts back (`link` fails if a lock exists).
 */
async function takeOver(file: string, holder: Holder, token: string, job: string): Promise<void> {
  const aside = `${file}.${token}.abandoned`;
  try {
    await rename(file, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  const moved = await readFile(aside, 'utf8').catch(() => holder.text);
  if (moved !== holder.text) {
    await link(aside, file).catch(() => undefined);
    await unlink(aside).catch(() => undefined);
    throw lockedError(file, job, { owner: parseOwner(moved), text: moved, ageMs: 0 });
  }
  await unlink(aside).catch(() => undefined);
}

async function ownsLock(file: string, token: string): Promise<boolean> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return parseOwner(text)?.token === token;
}

async function touch(file: string): Promise<void> {
  const now = new Date();
  await utimes(file, now, now);
}

function lockedError(file: string, job: string, holder: Holder): CheckpointDirectoryLockedError {
  const who = holder.owner ? `process ${holder.owner.pid} on ${holder.owner.hostname} (since ${holder.owner.since})` : 'another process';
  return new CheckpointDirectoryLockedError(
    `job '${job}': its checkpoint directory is in use by ${who}, lock file ${file}, heartbeat ${(holder.ageMs / 1000).toFixed(1)} s ago; ` +
      'stop that run first, or give this job another name or checkpoint directory. A lock whose process died is taken over at the next start ' +
      '(from another host, once its heartbeat is stale)',
  );
}
