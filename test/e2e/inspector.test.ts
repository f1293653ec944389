import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckpointStorage } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { pausableSource, readings, sumsJob } from '../checkpoint/fixtures';
import { checkpointVisits, visits, visitsJob } from '../query/fixtures';
import { artifactPath, buildPlayground, chromiumPath, launchChromium } from './e2eSupport';

const bin = fileURLToPath(new URL('../../bin/weir.js', import.meta.url));

// The visual inspector as `weir inspect <dir> --serve` serves it, on checkpoints of a test job (12 users, a count,
// a Map of Dates and an average per user) and a savepoint of another run: counts, key search, diff, a savepoint
// browsed and diffed like a checkpoint, and a corrupted checkpoint shown with its error.
describe.skipIf(!chromiumPath)('visual inspector (Chromium, weir inspect --serve)', () => {
  let root: string;
  let uiDir: string;
  let cli: ChildProcess;
  let url: string;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'weir-inspector-e2e-'));
    await checkpointVisits(fsCheckpointStorage(root));
    // Damage checkpoint 2: flip a byte in its keyed state file.
    const dir = join(root, 'visits', 'chk-2');
    const file = (await readdir(dir)).find((name) => name.startsWith('per-user.'))!;
    const bytes = await readFile(join(dir, file));
    bytes[bytes.length - 5] = bytes[bytes.length - 5]! ^ 0x55;
    await writeFile(join(dir, file), bytes);
    // A savepoint after 30 visits (savepoint 1) of a run checkpointing elsewhere, into the root's `savepoints`.
    const elsewhere = await mkdtemp(join(tmpdir(), 'weir-inspector-e2e-run-'));
    const paused = pausableSource(visits, [30]);
    const running = visitsJob(paused.source, { storage: fsCheckpointStorage(elsewhere), chunkSize: 10 }).job.start();
    await paused.reached(30);
    await running.savepoint({ storage: fsCheckpointStorage(root) });
    paused.release(30);
    await running.done;
    await rm(elsewhere, { recursive: true, force: true });
    // Job 'write-failures' (listed after 'visits', which the page opens first): checkpoint 1 fails on a full disk (its directory is removed), the final checkpoint 2 completes.
    const storage = fsCheckpointStorage(root);
    const fullDisk: CheckpointStorage = {
      ...storage,
      async write(path, data) {
        if (/chk-1\/sum\./.test(path)) throw Object.assign(new Error(`ENOSPC: no space left on device, write '${path}'`), { code: 'ENOSPC' });
        return storage.write(path, data);
      },
    };
    const sums = pausableSource(readings, [50]);
    const failing = sumsJob({ name: 'write-failures', checkpoints: { storage: fullDisk, tolerableFailures: 1 }, onWarning: () => undefined }, sums.source).job.start();
    await sums.reached(50);
    failing.checkpoint().catch(() => undefined);
    sums.release(50);
    await failing.done;

    uiDir = await buildPlayground();
    cli = spawn(process.execPath, [bin, 'inspect', root, '--serve'], { env: { ...process.env, WEIR_INSPECTOR_UI: uiDir }, stdio: ['ignore', 'pipe', 'pipe'] });
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      cli.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /http:\/\/127\.0\.0\.1:\d+\/\S+/.exec(out);
        if (match) resolve(match[0]);
      });
      cli.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      cli.once('exit', (code) => reject(new Error(`weir inspect --serve exited with ${code}: ${out}`)));
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    page.on('pageerror', (error) => errors.push(error.message));
  });
  afterAll(async () => {
    await browser?.close();
    cli?.kill('SIGTERM');
    if (root) await rm(root, { recursive: true, force: true });
    if (uiDir) await rm(uiDir, { recursive: true, force: true });
  });

  it('serves a read-only API on 127.0.0.1', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/inspector\.html\?source=http$/);
    const base = new URL(url).origin;
    expect(await (await fetch(`${base}/api/list?dir=visits`)).json()).toEqual(['chk-1', 'chk-2', 'chk-3']);
    expect((await fetch(`${base}/api/read?path=../etc/passwd`)).status).toBe(400);
    expect((await fetch(`${base}/api/read?path=visits/chk-9/_metadata`)).status).toBe(404);
    expect((await fetch(`${base}/api/list?dir=visits`, { method: 'POST' })).status).toBe(405);
  });

  it('lists a failed checkpoint among the completed ones, with its reason', async () => {
    await page.goto(`${url}&job=write-failures`);
    const failed = page.locator('#checkpoints tr.failed');
    await failed.waitFor();
    expect(await failed.locator('td').first().innerText()).toBe('1');
    expect(await failed.innerText()).toMatch(/ENOSPC: no space left on device/);
    await page.locator('#checkpoints tr[data-path="write-failures/chk-2"]').waitFor();
  });

  it('shows the timeline, per-state counts and the key-group histogram', async () => {
    await page.goto(url);
    await page.locator('#checkpoints tr[data-path="visits/chk-3"]').waitFor();
    expect(await page.locator('#checkpoints tr[data-kind="checkpoint"]').count()).toBe(3);
    expect(await page.locator('#checkpoints tr[data-kind="savepoint"]').count()).toBe(1);
    // Every checkpoint with metadata is charted, the corrupted one too (its metadata is sound); savepoints are not.
    expect(Number(await page.locator('#timeline').getAttribute('data-points'))).toBe(3);
    expect(await page.locator('#checkpoint-title').innerText()).toMatch(/checkpoint #3/);
    expect(await page.locator('tr[data-state="per-user/count"] td.keys').innerText()).toBe('12');
    expect(await page.locator('tr[data-state="per-user/pages"] td.keys').innerText()).toBe('12');
    expect(await page.locator('tr[data-state="per-user/count"] .histogram span').count()).toBe(128);
  });

  it('browses keys with prefix, search and pagination, showing rich values', async () => {
    await page.selectOption('#browse-state', { label: 'per-user / pages' });
    await page.waitForFunction(() => document.querySelector('#keys')?.getAttribute('data-total') === '12');
    const first = await page.locator('#keys tr').nth(1).innerText();
    expect(first).toMatch(/admin-0/);
    // admin-0 made visits 10, 22, 34, 46 and 58, all to p1: a Map holding the Date of the last one.
    expect(first).toMatch(/Map\(1\) \{"p1" => Date\(2024-01-01T00:00:58\.000Z\)\}/);
    await page.fill('#prefix', 'admin');
    await page.waitForFunction(() => document.querySelector('#keys')?.getAttribute('data-total') === '2');
    await page.fill('#prefix', '');
    await page.fill('#search', 'user-0');
    await page.waitForFunction(() => document.querySelector('#keys')?.getAttribute('data-total') === '10');
    await page.fill('#search', '');
    await page.selectOption('#browse-state', { label: 'per-user / count' });
    await page.waitForFunction(() => document.querySelector('#keys')?.getAttribute('data-total') === '12');
    expect(await page.locator('#page-info').innerText()).toMatch(/1–12 of 12/);
  });

  it('diffs two checkpoints with before and after values', async () => {
    await page.selectOption('#diff-from', 'visits/chk-1');
    await page.selectOption('#diff-to', 'visits/chk-3');
    await page.click('#diff-run');
    const count = page.locator('.diff-state[data-state="per-user/count"]');
    await count.waitFor();
    // After 20 visits every user had been seen; by 60 each has 5: all 12 changed, none added or removed.
    expect(await count.getAttribute('data-changed')).toBe('12');
    expect(await count.getAttribute('data-added')).toBe('0');
    expect(await count.locator('tr.changed').first().innerText()).toMatch(/admin-0\s+\d\s+5/);
  });

  it('browses and diffs a savepoint like a checkpoint', async () => {
    const row = page.locator('#checkpoints tr[data-kind="savepoint"]');
    expect(await row.innerText()).toMatch(/1\s+savepoint\s+complete/);
    const path = (await row.getAttribute('data-path'))!;
    expect(path).toMatch(/^savepoints\/savepoint-visits-1-[0-9a-f]{8}$/);
    await row.click();
    await page.waitForFunction(() => /savepoint #1 of visits/.test(document.querySelector('#checkpoint-title')?.textContent ?? ''));
    expect(await page.locator('tr[data-state="per-user/count"] td.keys').innerText()).toBe('12');
    await page.selectOption('#browse-state', { label: 'per-user / count' });
    await page.waitForFunction(() => document.querySelector('#keys')?.getAttribute('data-total') === '12');
    // admin-0 made visits 10 and 22 of the first 30.
    await page.fill('#prefix', 'admin-0');
    await page.waitForFunction(() => document.querySelector('#keys')?.getAttribute('data-total') === '1');
    expect(await page.locator('#keys tr').nth(1).innerText()).toMatch(/admin-0\s+\d+\s+2/);
    await page.fill('#prefix', '');
    await page.selectOption('#diff-from', path);
    await page.selectOption('#diff-to', 'visits/chk-3');
    await page.click('#diff-run');
    await page.locator(`#diff[data-from="${path}"]`).waitFor();
    const count = page.locator('.diff-state[data-state="per-user/count"]');
    expect(await count.getAttribute('data-changed')).toBe('12');
  });

  it('shows a corrupted checkpoint with its error, and diffing it explains why it cannot', async () => {
    expect(await page.locator('#checkpoints tr[data-path="visits/chk-2"]').innerText()).toMatch(/corrupted.*per-user\.0/s);
    await page.selectOption('#checkpoint', 'visits/chk-2');
    const error = page.locator('#checkpoint-error');
    await error.waitFor({ state: 'visible' });
    expect(await error.innerText()).toMatch(/checkpoint #2 is corrupted: .*per-user\.0.*(checksum|crc|corrupt)/i);
    await page.screenshot({ path: await artifactPath('inspector.png'), fullPage: true });
    await page.selectOption('#diff-from', 'visits/chk-2');
    await page.click('#diff-run');
    await page.locator('#diff .error-text').waitFor();
    expect(await page.locator('#diff').innerText()).toMatch(/cannot diff: .*per-user\.0/);
    expect(errors).toEqual([]);
  });
});
