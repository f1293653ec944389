import { readFile, writeFile } from 'node:fs/promises';

/** One figure: what `bench/results.json` holds. Ratios have unit `ratio`. */
export interface Result {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  /** The figure a ratio must reach (`>=`) or stay under (`<=`); printed, not written to the results file. */
  readonly bar?: { readonly op: '>=' | '<='; readonly value: number };
}

export function passes(result: Result): boolean | undefined {
  const { bar } = result;
  if (!bar) return undefined;
  return bar.op === '>=' ? result.value >= bar.value : result.value <= bar.value;
}

function format(value: number): string {
  if (value === 0) return '0';
  const abs = Math.abs(value);
  if (abs >= 1e6) return value.toExponential(3);
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(3);
}

/** Prints the results as a table: name, value, unit, and the bar with pass/fail where one exists. */
export function printTable(results: readonly Result[]): void {
  const rows = results.map((r) => {
    const ok = passes(r);
    return [r.name, format(r.value), r.unit, r.bar ? `${r.bar.op} ${r.bar.value}` : '', ok === undefined ? '' : ok ? 'pass' : 'FAIL'];
  });
  const header = ['name', 'value', 'unit', 'bar', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
}

interface Written {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly measuredAt?: string;
}

/**
 * Writes `[{ name, value, unit, measuredAt }]` to `path`, keeping the figures of groups not run this time: running one
 * group (`npm run bench -- nexmark`) used to wipe every other group's figures from the file.
 */
export async function writeResults(path: string, results: readonly Result[]): Promise<void> {
  const measuredAt = new Date().toISOString();
  const byName = new Map<string, Written>();
  for (const kept of await readWritten(path)) byName.set(kept.name, kept);
  for (const { name, value, unit } of results) byName.set(name, { name, value, unit, measuredAt });
  await writeFile(path, `${JSON.stringify([...byName.values()], null, 2)}\n`);
}

/** The figures already in `path`; none when it is missing or not a results file (it is ours to overwrite then). */
async function readWritten(path: string): Promise<Written[]> {
  try {
    const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
    return Array.isArray(parsed) ? parsed.filter((entry): entry is Written => typeof entry?.name === 'string') : [];
  } catch {
    return [];
  }
}
