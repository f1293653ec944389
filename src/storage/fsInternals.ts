/**
 * File-system helpers shared by the Node checkpoint storage and the file sink: atomic, durable writes and the
 * directory fsync that makes renames and unlinks survive a crash. Internal: not exported from `weir/node`.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { errorCode, StorageAccessError, StorageQuotaExceededError, WeirError } from '../core/errors.js';

/**
 * Writes `file` so that a reader, or the next process after a crash, sees either the old bytes or all new bytes.
 * The temp file lives in the target's directory because `rename` is only atomic within one file system.
 * @example await writeFileAtomic('/tmp/chk-1/_metadata', bytes)
 */
export async function writeFileAtomic(file: string, data: Uint8Array): Promise<void> {
  const dir = dirname(file);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
}

/**
 * Makes a rename or unlink in `dir` durable: without it a crash can bring back the old directory entry.
 * @example await syncDirectory('/tmp/chk-1')
 */
export async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    // Windows cannot open or fsync a directory; its renames are durable without it.
    const code = errorCode(error);
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL') throw error;
  }
}

/**
 * Whether a directory entry is the temp file of an unfinished `writeFileAtomic` (hidden from listings).
 * @example names.filter((name) => !isTempFile(name))
 */
export function isTempFile(name: string): boolean {
  return name.startsWith('.') && name.endsWith('.tmp');
}

/** The codes of a file system that refuses writes: read-only, or no permission. */
const REFUSED = new Set(['EROFS', 'EACCES', 'EPERM']);

/**
 * Turns a system error of a file operation into the typed error a reader can act on, naming the file and the real
 * cause: a full disk (`StorageQuotaExceededError`), a read-only file system or a missing permission
 * (`StorageAccessError`); `cause` keeps the system error. Other errors are returned as they are. `who` is what was
 * at work (`checkpoint storage /var/chk`, `toFile(out.jsonl)`), `doing` what it did (`write`, `remove`, `read`).
 * @example catch (error) { throw await storageError(error, `checkpoint storage ${root}`, 'write') }
 */
export async function storageError(error: unknown, who: string, doing: string): Promise<unknown> {
  if (error instanceof WeirError) return error;
  const code = errorCode(error);
  const file = (error as { path?: unknown } | null)?.path;
  if (code === undefined || typeof file !== 'string') return error;
  const cannot = `${who}: cannot ${doing} ${file}`;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new StorageQuotaExceededError(
      `${cannot}: the disk is full (${code}); free space on that file system, or move the ${who.startsWith('toFile') ? 'output' : 'checkpoint directory'} ` +
        'to one with room. What was written before is intact',
      { cause: error },
    );
  }
  let refused = REFUSED.has(code) ? code : undefined;
  let where = file;
  // Node's recursive mkdir reports ENOENT for a directory it could not create under a read-only or forbidden parent:
  // the parent that exists tells the real cause.
  if (code === 'ENOENT' && (error as { syscall?: unknown }).syscall === 'mkdir') {
    where = await nearestExisting(file);
    const denied = await access(where, constants.W_OK).then(() => undefined, (failure: unknown) => errorCode(failure));
    if (denied !== undefined && REFUSED.has(denied)) refused = denied;
  }
  if (refused === undefined) return error;
  const why =
    refused === 'EROFS'
      ? `${where} is on a read-only file system (EROFS); remount it read-write, or use a directory on a writable one`
      : `permission denied on ${where} (${refused}); give this process (uid ${process.getuid?.() ?? '?'}) ${doing === 'read' ? 'read' : 'write'} access to it, or use another directory`;
  return new StorageAccessError(`${cannot}: ${why}. What was written before is intact`, { cause: error });
}

async function nearestExisting(path: string): Promise<string> {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if (await stat(dir).then(() => true, () => false)) return dir;
    if (dirname(dir) === dir) return dir;
  }
}
