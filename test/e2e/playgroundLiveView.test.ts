import { rm } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import type { PreviewServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLES } from '../../playground/src/examples';
import { artifactPath, buildPlayground, chromiumPath, launchChromium, previewPlayground } from './e2eSupport';

// The live job view in the playground, fed by the job running in the page (running.view()) and drawn by the same
// module as the page Node serves at /job: the graph with live rates, then a crash and a savepoint as markers on its
// timeline and rows in its history. Every wait is for a state of the page (generous timeouts: the machine may be loaded).
const WAIT = 60_000;

describe.skipIf(!chromiumPath)('playground live job view (Chromium)', { timeout: 5 * WAIT }, () => {
  let outDir: string;
  let server: PreviewServer;
  let url: string;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    outDir = await buildPlayground();
    ({ server, url } = await previewPlayground(outDir));
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    await context.addInitScript((id) => {
      localStorage.setItem('weir-playground:example', id);
      localStorage.setItem('weir-playground:workers', '0');
    }, EXAMPLES[0]!.id);
    page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(url);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  const status = (name: string) => page.locator(`[data-field="${name}"]`).innerText();

  it('draws the running job with live rates, and its crash and savepoint on the timeline', async () => {
    await page.waitForFunction(() => document.querySelector('[data-field="status"]')?.textContent === 'running');
    // Records flow at the page's rate: the source's rate out becomes positive in the graph.
    await page.waitForFunction(() => {
      const source = document.querySelector('#live svg.job-graph g.operator');
      return Number(source?.getAttribute('data-records-out-per-second')) > 0;
    });
    expect(await page.locator('#live svg.job-graph g.operator').count()).toBeGreaterThanOrEqual(2);
    expect(await page.locator('#live svg.job-graph path.edge').count()).toBeGreaterThanOrEqual(1);
    await page.waitForFunction(() => document.querySelectorAll('#live table.live-history tr[data-status="completed"]').length > 0);

    await page.click('#crash');
    await page.waitForFunction(() => document.querySelector('[data-field="restarts"]')?.textContent === '1');
    // The savepoint is taken once the next attempt runs (restored from the checkpoint before the crash).
    await page.waitForFunction(() => document.querySelector('[data-field="restored"]')?.textContent?.startsWith('checkpoint #'));
    await page.click('#savepoint');
    await page.locator('#live-timeline .marker[data-kind="crash"]').waitFor({ state: 'attached' });
    await page.locator('#live-timeline .marker[data-kind="savepoint"]').waitFor({ state: 'attached' });
    expect(await page.locator('#live-timeline .marker[data-kind="crash"]').getAttribute('title')).toMatch(/^restart 1 at /);
    await page.locator('#live table.live-history tr[data-kind="savepoint"][data-status="completed"]').waitFor();
    expect(await page.locator('#live .live-status').innerText()).toMatch(/1 restart\b/);
    expect(await status('restarts')).toBe('1');
    await page.locator('#live').scrollIntoViewIfNeeded();
    await page.screenshot({ path: await artifactPath('playground-live-view.png'), fullPage: true });
    expect(errors).toEqual([]);
  });
});
