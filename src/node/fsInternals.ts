/**
 * File-system helpers shared by the Node checkpoint storage and the file sink: atomic, durable writes and the
 * directory fsync that makes renames and unlinks survive a crash. Internal: not exported from `weir/node`.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

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

/**
 * The `code` of a Node system error (`ENOENT`, …), or undefined.
 * @example if (errorCode(error) === 'ENOENT') return []
 */
export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}
