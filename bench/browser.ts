import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createServer } from 'vite';
import { CHROMIUM_ADVICE, CHROMIUM_ARGS, findChromium } from '../test/findChromium';
import { weirAliases } from '../weirAliases';
import type { BrowserBench } from './browser/page';
import type { Result } from './report';

const KEYED_EVENTS = 2_000_000;
const KEYED_KEYS = 10_000;
const CHECKPOINT_KEYS = 100_000;
const RICH_KEYS = 50_000;
/** Records of `browser/parallel-2-vs-1-workers`; `WEIR_BENCH_PARALLEL_RECORDS` shrinks it as for `parallel`. */
const PARALLEL_RECORDS = Number(process.env.WEIR_BENCH_PARALLEL_RECORDS ?? 2_000_000);

const root = fileURLToPath(new URL('./browser/', import.meta.url));
const repo = fileURLToPath(new URL('../', import.meta.url));

/**
 * `browser`: weir in headless Chromium (Debian's, through playwright-core), on a page vite serves from bench/browser/
 * with 'weir' and 'weir/browser' resolved to the sources as vite.config.ts resolves them: checkpointing 100k keys to
 * IndexedDB against one idb-keyval `set` of the same bytes (and of the state as a Map, the plain way), 50k keys of
 * rich values with and without IndexedDB's structured clone, and the keyed reduce against an RxJS scan, as in Node.
 * Skipped, saying so, where Chromium is missing.
 */
export async function browser(): Promise<Result[]> {
  const executablePath = findChromium() ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) {
    console.error(`[bench] browser: SKIPPED, Chromium was not found on PATH. ${CHROMIUM_ADVICE}`);
    return [];
  }
  const cacheDir = await mkdtemp(join(tmpdir(), 'weir-bench-vite-'));
  const server = await createServer({
    configFile: false,
    root,
    cacheDir,
    logLevel: 'warn',
    resolve: { alias: weirAliases },
    // Pre-bundled up front, so that the page does not reload half-way when vite discovers them.
    optimizeDeps: { include: ['rxjs', 'superjson', 'crc-32', 'idb-keyval'] },
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, fs: { allow: [repo] } },
  });
  const chrome = await chromium.launch({ executablePath, headless: true, args: [...CHROMIUM_ARGS, '--js-flags=--expose-gc'] });
  try {
    await server.listen();
    const url = server.resolvedUrls?.local[0];
    if (!url) throw new Error('vite did not report the URL of the bench page');
    const page = await chrome.newPage();
    page.on('pageerror', (error) => console.error(`[bench] browser: page error: ${error.message}`));
    await page.goto(url);
    await page.waitForFunction(() => (globalThis as { weirBench?: unknown }).weirBench !== undefined, undefined, { timeout: 60_000 });
    const version = chrome.version();
    const hasGc = await page.evaluate(() => (globalThis as unknown as { weirBench: BrowserBench }).weirBench.hasGc);
    console.error(`[bench] browser: Chromium ${version} at ${url}${hasGc ? '' : ' (no gc(): heap not settled between runs)'}`);

    const keyed = await page.evaluate(
      ([events, keys]) => (globalThis as unknown as { weirBench: BrowserBench }).weirBench.keyedReduce(events, keys, 3),
      [KEYED_EVENTS, KEYED_KEYS] as const,
    );
    const idb = await page.evaluate(
      (keys) => (globalThis as unknown as { weirBench: BrowserBench }).weirBench.idbCheckpoint(keys, 5),
      CHECKPOINT_KEYS,
    );
    const rich = await page.evaluate(
      (keys) => (globalThis as unknown as { weirBench: BrowserBench }).weirBench.idbRichCheckpoint(keys, 3),
      RICH_KEYS,
    );
    const parallel = await page.evaluate(
      ([count, keys, work]) => (globalThis as unknown as { weirBench: BrowserBench }).weirBench.parallelWorkers(count, keys, work, 2),
      [PARALLEL_RECORDS, 10_000, 1500] as const,
    );
    console.error(
      `[bench] browser: ${PARALLEL_RECORDS} records, owned splits, ~2 µs each: ${Math.round(parallel.two)} records/s on 2 workers, ${Math.round(parallel.one)} on 1`,
    );
    console.error(
      `[bench] browser: a checkpoint of ${RICH_KEYS} keys of rich values (Date, Set, bigint) takes ${rich.cloneMs.toFixed(1)} ms with them ` +
        `structured-cloned beside the file, ${rich.superjsonMs.toFixed(1)} ms with superjson inside it`,
    );
    console.error(
      `[bench] browser: a checkpoint of ${CHECKPOINT_KEYS} keys is ${idb.files} files, ${(idb.bytes / 1e6).toFixed(2)} MB; ` +
        `best ${idb.checkpointMs.toFixed(1)} ms (stats ${idb.statsMs.toFixed(1)} ms) against ${idb.blobMs.toFixed(1)} ms for one set of its bytes and ` +
        `${idb.mapMs.toFixed(1)} ms for one set of the state as a Map; last checkpoint: ${idb.operators}`,
    );
    return [
      { name: 'browser/idb-checkpoint-ms', value: idb.checkpointMs, unit: 'ms' },
      { name: 'browser/idb-blob-set-ms', value: idb.blobMs, unit: 'ms' },
      { name: 'browser/idb-checkpoint-bytes', value: idb.bytes, unit: 'bytes' },
      { name: 'browser/idb-checkpoint-vs-blob', value: idb.checkpointMs / idb.blobMs, unit: 'ratio', bar: { op: '<=', value: 2 } },
      { name: 'browser/idb-map-set-ms', value: idb.mapMs, unit: 'ms' },
      { name: 'browser/idb-checkpoint-vs-map-set', value: idb.checkpointMs / idb.mapMs, unit: 'ratio', bar: { op: '<=', value: 1.0 } },
      { name: 'browser/idb-rich-checkpoint-ms', value: rich.cloneMs, unit: 'ms' },
      { name: 'browser/idb-rich-checkpoint-superjson-ms', value: rich.superjsonMs, unit: 'ms' },
      { name: 'browser/idb-rich-checkpoint-clone-vs-superjson', value: rich.cloneMs / rich.superjsonMs, unit: 'ratio' },
      { name: 'browser/keyed-reduce-weir', value: keyed.weir, unit: 'events/s' },
      { name: 'browser/keyed-reduce-rx-scan', value: keyed.scan, unit: 'events/s' },
      { name: 'browser/keyed-reduce-weir-vs-rx-scan', value: keyed.weir / keyed.scan, unit: 'ratio', bar: { op: '>=', value: 0.6 } },
      { name: 'browser/parallel-2-vs-1-workers', value: parallel.two / parallel.one, unit: 'ratio', bar: { op: '>=', value: 1.6 } },
    ];
  } finally {
    await chrome.close();
    await server.close();
    await rm(cacheDir, { recursive: true, force: true });
  }
}
