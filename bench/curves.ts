import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM_ADVICE, CHROMIUM_ARGS, findChromium } from '../test/findChromium';
import { curvesPage, uplotAssets, type CurvesData } from './curvesPage';
import type { Result } from './report';

/** Largest state measured (`CURVES_MAX_KEYS`), and the heap each point's process gets (`CURVES_HEAP_MB`). */
const MAX_KEYS = Number(process.env.CURVES_MAX_KEYS ?? 10_000_000);
const HEAP_MB = Number(process.env.CURVES_HEAP_MB ?? 2048);
/** Events of a throughput point: every key once, and at least a million. */
const MIN_EVENTS = 1_000_000;
const CHECKPOINT_MAX_KEYS = 1_000_000;

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const repo = here('../');
const sizes = (max: number) => [1e3, 1e4, 1e5, 1e6, 1e7].filter((keys) => keys <= max);
const power = (keys: number) => `10${String(Math.round(Math.log10(keys))).replace(/\d/g, (d) => '⁰¹²³⁴⁵⁶⁷⁸⁹'[Number(d)]!)}`;

/** Runs one point in a child process under the heap limit: its JSON, or why it gave none. */
function point(args: string[]): { ok: true; value: Record<string, number> } | { ok: false; why: string } {
  const run = spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '--import', 'tsx', here('./curvesPoint.ts'), ...args], {
    cwd: repo,
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  if (run.status === 0) return { ok: true, value: JSON.parse(run.stdout.trim().split('\n').pop()!) as Record<string, number> };
  if (/heap out of memory|Allocation failed/i.test(run.stderr)) return { ok: false, why: `out of memory (${HEAP_MB} MB heap)` };
  if (run.signal === 'SIGTERM') return { ok: false, why: 'over 10 minutes' };
  return { ok: false, why: `failed (status ${run.status}): ${run.stderr.trim().split('\n').slice(-3).join(' ')}` };
}

/** The page's PNG, drawn by Debian's Chromium through playwright-core. */
async function screenshot(html: string, png: string): Promise<boolean> {
  const executablePath = findChromium();
  if (executablePath === undefined) {
    console.error(`[bench] curves: no PNG, Chromium was not found on PATH. ${CHROMIUM_ADVICE}`);
    return false;
  }
  const browser = await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(pathToFileURL(html).href);
    await page.waitForFunction(() => (globalThis as { curvesDrawn?: boolean }).curvesDrawn === true, undefined, { timeout: 30_000 });
    await page.screenshot({ path: png, fullPage: true });
    return true;
  } finally {
    await browser.close();
  }
}

/**
 * `curves` (not run by default: several minutes): keyed reduce throughput against distinct keys (10³…10⁷, heap and
 * LMDB backends), checkpoint time and bytes (full and incremental) and restore time against state size (10³…10⁶),
 * each point in a process of its own with a bounded heap, so that a size the heap cannot hold shows where the curve
 * stops. Writes bench/curves.json, bench/curves.html (uPlot inlined: it opens from disk) and docs/curves.png.
 */
export async function curves(): Promise<Result[]> {
  // Other work on the machine moves every point: the page says how busy it was.
  const load = loadavg()[0]!;
  const notes: string[] = [];
  const results: Result[] = [];
  const throughput: CurvesData['throughput'][number][] = [];
  for (const keys of sizes(MAX_KEYS)) {
    const events = Math.max(keys, MIN_EVENTS);
    const row = { keys, events, heap: null as number | null, lmdb: null as number | null };
    for (const backend of ['heap', 'lmdb'] as const) {
      const measured = point(['throughput', backend, String(keys), String(events)]);
      console.error(`[bench] curves: ${backend} at ${keys} keys: ${measured.ok ? `${Math.round(measured.value.eventsPerS!)} events/s` : measured.why}`);
      if (measured.ok) {
        row[backend] = measured.value.eventsPerS!;
        results.push({ name: `curves/throughput-${backend}-${keys}`, value: row[backend], unit: 'events/s' });
      } else notes.push(`${backend} backend at ${power(keys)} keys: ${measured.why}`);
    }
    throughput.push(row);
  }
  const checkpoints: CurvesData['checkpoints'][number][] = [];
  for (const keys of sizes(Math.min(MAX_KEYS, CHECKPOINT_MAX_KEYS))) {
    const measured = point(['checkpoint', String(keys)]);
    console.error(`[bench] curves: checkpoints at ${keys} keys: ${measured.ok ? JSON.stringify(measured.value) : measured.why}`);
    if (!measured.ok) notes.push(`checkpoints at ${power(keys)} keys: ${measured.why}`);
    const value = (name: string) => (measured.ok ? measured.value[name]! : null);
    checkpoints.push({ keys, fullMs: value('fullMs'), fullBytes: value('fullBytes'), deltaMs: value('deltaMs'), deltaBytes: value('deltaBytes'), restoreMs: value('restoreMs') });
    for (const name of ['fullMs', 'fullBytes', 'deltaMs', 'deltaBytes', 'restoreMs']) {
      if (measured.ok) results.push({ name: `curves/${name}-${keys}`, value: measured.value[name]!, unit: name.endsWith('Ms') ? 'ms' : 'bytes' });
    }
  }
  const data: CurvesData = {
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GB, Node ${process.version}, load ${load.toFixed(1)} at the start; each point in a process of its own with a ${HEAP_MB} MB heap; ${new Date().toISOString().slice(0, 10)}`,
    throughput,
    checkpoints,
    notes,
  };
  await writeCurves(data);
  return results;
}

/** Writes bench/curves.json, bench/curves.html and its picture, docs/curves.png. */
export async function writeCurves(data: CurvesData): Promise<void> {
  const json = here('./curves.json');
  const html = here('./curves.html');
  const png = here('../docs/curves.png');
  writeFileSync(json, `${JSON.stringify(data, null, 2)}\n`);
  writeFileSync(html, curvesPage(data, uplotAssets()));
  const drawn = await screenshot(html, png);
  console.error(`[bench] curves: wrote ${json}, ${html}${drawn ? ` and ${png}` : ''}`);
}
