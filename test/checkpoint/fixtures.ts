import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

// Node-only helpers for checkpoint tests; the job fixtures themselves are isomorphic, in jobFixtures.ts.
export * from './jobFixtures';

/** Names of the entries of a directory, sorted; empty when it does not exist. */
export async function list(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [])).sort();
}

/** Total size of the files of a directory. */
export async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) total += (await stat(join(dir, name))).size;
  return total;
}
