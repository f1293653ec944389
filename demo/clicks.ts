// `npm run demo`: a clickstream job that crashes part-way and recovers from its last checkpoint.
//
// It generates 200k click events, counts clicks and time spent per user with keyed state, writes the running
// totals exactly once to a file, checkpoints to disk every 200 ms, and has a user function throw once. The
// fixed-delay restart strategy restores the last completed checkpoint and the job finishes as if nothing happened.
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createJob, fold, keyBy, map, type CheckpointStats, type RunningJob } from 'weir';
import { fromFile, fsCheckpointStorage, progressBar, toFile } from 'weir/node';

interface Click {
  /** 1, 2, 3 … in file order. */
  id: number;
  user: string;
  page: string;
  /** Time spent on the page, in ms. */
  ms: number;
  ts: number;
}

interface UserTotals {
  user: string;
  clicks: number;
  ms: number;
}

const DIR = '.demo';
const EVENTS = 200_000;
const CRASH_AT = 120_000;
const PAGES = ['/', '/pricing', '/docs', '/docs/checkpoints', '/docs/state', '/blog', '/signup', '/checkout'];

/** mulberry32: a seeded PRNG, so every run generates the same clickstream. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 200k clicks by 2,000 users; a few users click far more than the rest, as in real traffic. */
async function generateClicks(path: string): Promise<void> {
  const next = random(42);
  const lines: string[] = [];
  let ts = Date.UTC(2024, 0, 1);
  for (let i = 0; i < EVENTS; i++) {
    const user = `user-${String(Math.floor(2000 * next() ** 3)).padStart(4, '0')}`;
    const page = PAGES[Math.floor(next() * PAGES.length)]!;
    ts += Math.floor(next() * 50);
    lines.push(JSON.stringify({ id: i + 1, user, page, ms: 200 + Math.floor(next() * 30_000), ts } satisfies Click));
  }
  await writeFile(path, `${lines.join('\n')}\n`);
}

/**
 * Stands in for real enrichment work (a geo-IP or user-agent lookup, a few µs per click), so that the job runs for
 * a second or two and the 200 ms checkpoints have something to show.
 */
function lookUpPage(page: string): string {
  let hash = 0;
  for (let i = 0; i < 2500; i++) hash = (Math.imul(hash, 31) + page.charCodeAt(i % page.length)) | 0;
  return hash === 0 ? page.toLowerCase() : page;
}

/** A plain text table: numbers right-aligned, text left-aligned. */
function printTable(rows: readonly Record<string, string | number>[]): void {
  const columns = Object.keys(rows[0] ?? {});
  const cell = (value: string | number | undefined) => (typeof value === 'number' ? value.toLocaleString('en') : (value ?? ''));
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => cell(row[column]).length)));
  const line = (cells: string[], numeric: boolean[]) =>
    `  ${cells.map((text, i) => (numeric[i] ? text.padStart(widths[i]!) : text.padEnd(widths[i]!))).join('  ')}`.trimEnd();
  const numeric = columns.map((column) => typeof rows[0]?.[column] === 'number');
  console.log(line(columns, numeric));
  console.log(line(widths.map((width) => '─'.repeat(width)), numeric));
  for (const row of rows) console.log(line(columns.map((column) => cell(row[column])), numeric));
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

async function main(): Promise<void> {
  await rm(DIR, { recursive: true, force: true });
  await mkdir(DIR, { recursive: true });
  await generateClicks(`${DIR}/clicks.jsonl`);
  console.log(`Generated ${EVENTS.toLocaleString('en')} clicks in ${DIR}/clicks.jsonl`);

  const job = createJob({
    name: 'clicks',
    checkpoints: { storage: fsCheckpointStorage(`${DIR}/checkpoints`), interval: 200, retain: 3 },
    restart: { strategy: 'fixed-delay', attempts: 3, delay: 100 },
    chunkSize: 256,
  });

  // The bug: one click makes the enrichment step throw. The flag keeps it to the first attempt, as a transient
  // failure would (a lost connection, a timeout); after the restart the same click goes through.
  let crashed = false;
  let resumed = false;
  let running: RunningJob | undefined;
  // A bar of the clicks enriched so far, on a terminal only (nothing when the output is piped, as in CI); it goes
  // back with the source after the restart, as the replayed clicks are processed again.
  const progress = progressBar('clicks');
  const enrich = (click: Click): Click => {
    if (click.id % 1000 === 0) progress({ done: click.id, total: EVENTS, file: 'clicks.jsonl' });
    if (!crashed && click.id === CRASH_AT) {
      crashed = true;
      progress.stop();
      console.log(`💥 Click #${CRASH_AT.toLocaleString('en')}: the enrichment step throws; the job restarts from its last checkpoint`);
      throw new Error(`simulated failure at click ${CRASH_AT}`);
    }
    if (crashed && !resumed) {
      resumed = true;
      progress.stop();
      const replayed = CRASH_AT - click.id;
      const from = running?.restoredFrom;
      console.log(
        `↻ Restored ${from ? `checkpoint ${from.id} (${resolve(DIR, 'checkpoints', from.path)})` : 'nothing: no checkpoint had completed, so the job started over'}: ` +
          `the source resumes at click #${click.id.toLocaleString('en')}, so ${replayed.toLocaleString('en')} clicks are processed a second time`,
      );
    }
    return { ...click, page: lookUpPage(click.page) };
  };

  job
    .source(fromFile<Click>(`${DIR}/clicks.jsonl`, { parse: JSON.parse }), { uid: 'clicks' })
    .pipe(
      map(enrich, { uid: 'enrich' }),
      keyBy((click) => click.user),
      fold<Click, UserTotals>({ user: '', clicks: 0, ms: 0 }, (totals, click) => ({ user: click.user, clicks: totals.clicks + 1, ms: totals.ms + click.ms }), {
        uid: 'per-user',
      }),
      toFile(`${DIR}/per-user.jsonl`, { uid: 'per-user-out' }),
    );

  const started = performance.now();
  // The directory was emptied above, so this starts fresh; run the job again on the same directory and it would
  // restore the final checkpoint (running.restoredFrom says which).
  running = job.start({ restore: 'latest' });
  const result = await running.done;
  progress.stop();
  const elapsed = performance.now() - started;

  // The committed output holds every user's running totals in order, so a user's last line is their total.
  const totals = new Map<string, UserTotals>();
  const output = await readFile(`${DIR}/per-user.jsonl`, 'utf8');
  let lines = 0;
  for (const line of output.split('\n')) {
    if (line === '') continue;
    const row = JSON.parse(line) as UserTotals;
    totals.set(row.user, row);
    lines++;
  }
  const clicks = Array.from(totals.values()).reduce((sum, row) => sum + row.clicks, 0);
  console.log(
    `\nJob ${result.status} in ${(elapsed / 1000).toFixed(1)} s with ${result.restarts} restart${result.restarts === 1 ? '' : 's'}: ` +
      `${lines.toLocaleString('en')} output lines, ${clicks.toLocaleString('en')} clicks counted for ${totals.size.toLocaleString('en')} users ` +
      `(${clicks === EVENTS ? 'each click exactly once' : `expected ${EVENTS.toLocaleString('en')}!`})`,
  );

  console.log('\nTop users, read back from the committed output:\n');
  const top = Array.from(totals.values())
    .sort((a, b) => b.clicks - a.clicks || a.user.localeCompare(b.user))
    .slice(0, 5);
  printTable(
    top.map((row) => ({
      user: row.user,
      clicks: row.clicks,
      'time on site': `${(row.ms / 3_600_000).toFixed(1)} h`,
      'per click': `${(row.ms / row.clicks / 1000).toFixed(1)} s`,
    })),
  );

  console.log('\nCheckpoints (fs storage, every 200 ms, retain: 3, full):\n');
  const checkpoints = result.checkpointHistory;
  // Full checkpoints persist the whole state, so the bytes written are its size; with incremental checkpoints a
  // delta writes less than the state it restores, and the table shows both. Checkpoints that did not complete
  // (aborted by the crash, say) get a status column and their reason.
  const columns: { name: string; value: (c: CheckpointStats) => string | number; shown?: boolean }[] = [
    { name: 'id', value: (c) => c.id },
    { name: 'status', value: (c) => c.status, shown: checkpoints.some((c) => c.status !== 'completed') },
    { name: 'kind', value: (c) => (c.final ? 'final' : 'periodic') },
    { name: 'duration ms', value: (c) => Math.round(c.durationMs) },
    { name: 'written', value: (c) => kb(c.bytes) },
    { name: 'state size', value: (c) => kb(c.fullSize), shown: checkpoints.some((c) => c.fullSize !== c.bytes) },
    {
      name: 'on disk',
      value: (c) => (existsSync(c.path) ? c.path : c.status === 'completed' ? 'deleted (older than the 3 retained)' : (c.reason ?? 'removed')),
    },
  ];
  const shown = columns.filter((column) => column.shown ?? true);
  printTable(checkpoints.map((c) => Object.fromEntries(shown.map((column) => [column.name, column.value(c)]))));
  console.log(`\nCheckpoint directory: ${resolve(DIR, 'checkpoints', job.name)}`);
  console.log(`Output:               ${resolve(DIR, 'per-user.jsonl')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
