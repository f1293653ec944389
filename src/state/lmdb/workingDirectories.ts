/**
 * The LMDB backend's working directories and their clean-up. A directory is named after the process that made it,
 * `weir-lmdb-<host>-<pid>-<start>-<random>` (`host` a hash of the host name, `start` the process's start time as
 * the kernel counts it), so a process killed with SIGKILL, which never disposes its backends, still leaves a name
 * that says whose it was. A later start removes the directories of processes that are gone: same host, and no
 * process with that pid, or one with that pid but another start time (pids are reused, in containers every run may
 * be pid 1). A directory of a live process, of another host, or in an older naming is never touched.
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import CRC32 from 'crc-32';
import { errorCode } from '../../core/errors.js';

const PREFIX = 'weir-lmdb-';
const NAME = /^weir-lmdb-([0-9a-f]{8})-(\d+)-(\d+|x)-[^-]+$/;

const host = (CRC32.str(hostname()) >>> 0).toString(16).padStart(8, '0');

/**
 * When a process started, in clock ticks since boot (field 22 of Linux's `/proc/<pid>/stat`): with the pid, it names
 * one process for good. `null` when no such process runs; `undefined` where there is no `/proc` to ask.
 */
function startTime(pid: number | 'self'): string | null | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT' && process.platform === 'linux') return null;
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

const ownStart = startTime('self') ?? 'x';

/** The prefix `mkdtemp` completes with a random suffix for a new working directory of this process. */
export function workingDirectoryPrefix(path: string): string {
  return join(path, `${PREFIX}${host}-${process.pid}-${ownStart}-`);
}

/** Whether the process that named a working directory `name` is gone for certain. */
function isAbandoned(name: string): boolean {
  const match = NAME.exec(name);
  if (match === null || match[1] !== host) return false;
  const pid = Number(match[2]);
  const started = match[3];
  const now = startTime(pid);
  if (now === null) return true;
  if (now !== undefined) return started !== 'x' && now !== started;
  // No /proc: only a pid that no process has tells.
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return errorCode(error) === 'ESRCH';
  }
}

/**
 * Removes the working directories under `path` left by processes that are gone; returns their names. A directory
 * that cannot be removed stays for the next start.
 * @example removeAbandonedWorkingDirectories('/var/tmp/weir')
 */
export function removeAbandonedWorkingDirectories(path: string): string[] {
  let names: string[];
  try {
    names = readdirSync(path);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(PREFIX) || !isAbandoned(name)) continue;
    try {
      rmSync(join(path, name), { recursive: true, force: true });
      removed.push(name);
    } catch {
      // Another start may be removing it too, or it is not ours to remove: left for the next start.
    }
  }
  return removed;
}
