import { rm } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { map, memoryCheckpointStorage, type CheckpointStorage, type RunningJob } from 'weir';
import { serveQueryableState, type QueryableStateServer } from 'weir/node';
import { pausableSource, readings, sumsJob, type Reading } from '../checkpoint/fixtures';
import { artifactPath, buildPlayground, chromiumPath, launchChromium } from './e2eSupport';

// The live job view as `serveQueryableState(running, { liveView })` serves it at /job, over a job of this process
// that had a failed checkpoint (a storage failing a write), a savepoint and a restart (a thrown error), and is
// paused on its input: the graph drawn with its rates, the failed row with its reason, and the timeline's markers.
describe.skipIf(!chromiumPath)('live job view (Chromium, served at /job)', () => {
  let uiDir: string;
  let server: QueryableStateServer;
  let running: RunningJob;
  let paused: ReturnType<typeof pausableSource<Reading>>;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    uiDir = await buildPlayground();
    paused = pausableSource(readings, [30, 90]);
    const base = memoryCheckpointStorage();
    const storage: CheckpointStorage = {
      ...base,
      async write(path, data) {
        if (/chk-1\/sum\./.test(path)) throw new Error(`ENOSPC: no space left on device, write '${path}'`);
        return base.write(path, data);
      },
    };
    let thrown = 0;
    const flaky = map((r: Reading) => {
      if (r.n === 70 && thrown++ === 0) throw new Error('flaky reading 70');
      return r;
    }, { uid: 'flaky' });
    running = sumsJob(
      { name: 'live-e2e', checkpoints: { storage, tolerableFailures: 1 }, restart: { strategy: 'fixed-delay', attempts: 1, delay: 5 } },
      paused.source,
      undefined,
      (flow) => flow.pipe(flaky),
    ).job.start();
    server = await serveQueryableState(running, { port: 0, token: 'live-secret', liveView: { uiDir } });
    await paused.reached(30);
    await running.checkpoint().catch(() => undefined);
    await running.savepoint({ path: 'savepoints' });
    paused.release(30);
    await paused.reached(90);
    await running.checkpoint();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on('pageerror', (error) => errors.push(error.message));
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    paused?.releaseAll();
    await running?.done.catch(() => undefined);
    if (uiDir) await rm(uiDir, { recursive: true, force: true });
  });

  it('serves the page without the token and its data only with it', async () => {
    const html = await fetch(`${server.url}/job`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/text\/html/);
    expect(await html.text()).toMatch(/weir live job view/);
    expect((await fetch(`${server.url}/v1/job`)).status).toBe(401);
    // Only plain file names under assets/ are files of the page: anything else is an API path, behind the token.
    const climbing = await fetch(`${server.url}/assets/..%2Fjob.html`, { headers: { authorization: 'Bearer live-secret' } });
    expect(climbing.status).toBe(404);
  });

  it('draws the graph with non-zero rates, the failed checkpoint with its reason, and the restart and savepoint markers', async () => {
    await page.goto(`${server.url}/job#token=live-secret`);
    // Rates are over the last 5 s of views; the first views measure from the job's start, when records flowed.
    await page.waitForFunction(() => {
      const rate = (uid: string, which: string) => Number(document.querySelector(`svg.job-graph g.operator[data-uid="${uid}"]`)?.getAttribute(which));
      return rate('sum', 'data-records-in-per-second') > 0 && rate('in', 'data-records-out-per-second') > 0;
    });
    expect(await page.locator('svg.job-graph g.operator').count()).toBe(4);
    expect(await page.locator('svg.job-graph path.edge').count()).toBe(3);
    expect(await page.locator('g.operator[data-uid="sum"]').textContent()).toMatch(/sum \(reduce\) ×1.*in [\d.]+k?\/s · out [\d.]+k?\/s/);
    expect(await page.locator('g.operator[data-uid="in"]').textContent()).toMatch(/busy \d+% · backpressured \d+%/);

    const failed = page.locator('table.live-history tr[data-status="failed"]');
    expect(await failed.count()).toBe(1);
    expect(await failed.getAttribute('data-id')).toBe('1');
    expect(await failed.locator('td.reason').innerText()).toMatch(/ENOSPC: no space left on device, write '.*chk-1\/sum\./);
    expect(await page.locator('table.live-history tr[data-kind="savepoint"][data-status="completed"]').count()).toBe(1);

    const timeline = page.locator('#live-timeline');
    await page.waitForFunction(() => document.querySelector('#live-timeline')?.getAttribute('data-markers') === '2');
    const restart = timeline.locator('.marker[data-kind="crash"]');
    expect(await restart.getAttribute('title')).toMatch(/restart 1 at .*: flaky reading 70/);
    expect(await timeline.locator('.marker[data-kind="savepoint"]').getAttribute('data-at')).toBe('2');
    expect(await page.locator('table.live-summary tr[data-figure="end to end duration"] td').count()).toBe(3);
    expect(await page.locator('table.live-operators tr[data-uid="sum"]').innerText()).toMatch(/sum\s+3\s+\d+ ms\s+\d+ ms\s+\d+ ms/);
    await page.screenshot({ path: await artifactPath('live-view.png'), fullPage: true });
    expect(errors).toEqual([]);
  });
});
