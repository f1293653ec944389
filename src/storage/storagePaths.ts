/**
 * Paths as the key-value checkpoint storages (memory, IndexedDB) keep them: normalized, `/`-separated keys, with no
 * directory entries; a directory is any prefix that ends at a `/`. Internal: not exported from the package root.
 */

/**
 * `a//b/` and `/a/b` name the same file as `a/b`, as they would on disk.
 * @example normalizePath('/job//chk-1/') // 'job/chk-1'
 */
export function normalizePath(path: string): string {
  return path.split('/').filter((segment) => segment !== '').join('/');
}

/**
 * What every path under `dir` starts with; the empty string for the root.
 * @example directoryPrefix('job/chk-1') // 'job/chk-1/'
 */
export function directoryPrefix(dir: string): string {
  const normalized = normalizePath(dir);
  return normalized === '' ? '' : `${normalized}/`;
}
