import { JobDefinitionError } from './errors.js';

/**
 * Rejects option names a public option object does not know. TypeScript catches a typo in an object literal, plain
 * JavaScript does not: `createJob({ checkpoint: … })` would silently run without checkpoints. The error names the
 * unknown option and the closest known one. Internal: not exported from the package root.
 * @example checkOptions(`job '${name}': checkpoints`, options.checkpoints, ['storage', 'interval', …])
 */
export function checkOptions(where: string, options: unknown, known: readonly string[]): void {
  if (options === undefined || options === null) return;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new JobDefinitionError(`${where}: options must be an object, got ${Array.isArray(options) ? 'an array' : typeof options}`);
  }
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    const closest = closestName(name, known);
    throw new JobDefinitionError(
      `${where}: unknown option '${name}'${closest ? `; did you mean '${closest}'?` : ''} (known options: ${known.map((k) => `'${k}'`).join(', ')})`,
    );
  }
}

/**
 * The known name nearest to `name` by edit distance (ignoring case), if near enough to be a typo: at most a third of
 * its length. A dozen short names per check, so the plain dynamic program is enough (no dependency for it).
 */
function closestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.ceil(name.length / 3)) + 1;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}
