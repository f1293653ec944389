// `npm run demo`: a clickstream job that crashes part-way and recovers from its last checkpoint.
//
// It generates 200k click events, counts clicks and time spent per user with keyed state, writes the running
// totals exactly once to a file, checkpoints to disk every 200 ms, and has a user function throw once. The
// fixed-delay restart strategy restores the last completed checkpoint and the job finishes as if nothing happened.
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createJob, fold, keyBy, map, type CheckpointStats } from 'weir';
import { fromFile, fsCheckpointStorage, toFile } from 'weir/node';

interface Click {
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
    lines.push(JSON.stringify({ user, page, ms: 200 + Math.floor(next() * 30_000), ts } satisfies Click));
  }
  await writeFile(path, `${lines.join('\n')}\n`);
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

async function main(): Promise<void> {
  const started = performance.now();
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

  // The bug: one bad click makes the enrichment step throw. The flag keeps it to the first attempt, as a transient
  // failure would (a lost connection, an out-of-memory kill); after the restart the same click goes through.
  let seen = 0;
  let crashed = false;
  const enrich = (click: Click): Click => {
    if (!crashed && ++seen === CRASH_AT) {
      crashed = true;
      console.log(`💥 Click #${CRASH_AT.toLocaleString('en')}: the enrichment step throws; the job restarts from its last checkpoint`);
      throw new Error(`simulated failure at click ${CRASH_AT}`);
    }
    return click;
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

  const running = job.start({ restore: 'latest' });
  const result = await running.done;
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

  console.log('\nTop users (from the committed output):');
  const top = Array.from(totals.values())
    .sort((a, b) => b.clicks - a.clicks || a.user.localeCompare(b.user))
    .slice(0, 5);
  console.table(
    top.map((row) => ({ user: row.user, clicks: row.clicks, 'time on site': `${(row.ms / 3_600_000).toFixed(1)} h`, 'avg per click': `${(row.ms / row.clicks / 1000).toFixed(1)} s` })),
  );

  console.log('Checkpoints:');
  console.table(
    result.checkpoints.map((checkpoint: CheckpointStats) => ({
      id: checkpoint.id,
      'duration ms': Math.round(checkpoint.durationMs),
      size: kb(checkpoint.bytes),
      bytes: checkpoint.bytes,
      final: checkpoint.final ? 'yes' : '',
      'on disk': existsSync(checkpoint.path) ? 'kept' : 'deleted (retain: 3)',
    })),
  );
  console.log(`Checkpoints are in ${resolve(DIR, 'checkpoints', job.name)}`);
  for (const checkpoint of result.checkpoints.filter((c) => existsSync(c.path))) console.log(`  ${checkpoint.path}`);
  console.log(`Output: ${resolve(DIR, 'per-user.jsonl')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
