import { rm } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import type { PreviewServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifactPath, buildPlayground, chromiumPath, launchChromium, previewPlayground } from './e2eSupport';

// The playground in Chromium: run the word-count example on IndexedDB checkpoints, crash it, check that state is
// exactly-once after the restore, take a savepoint and restore it, reload and resume, and show a user-code error.
describe.skipIf(!chromiumPath)('playground (Chromium)', () => {
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
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on('pageerror', (error) => errors.push(error.message));
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  const field = (name: string) => page.locator(`[data-field="${name}"]`).innerText();
  const setRate = (rate: number) =>
    page.locator('#rate').evaluate((input: HTMLInputElement, value) => {
      input.value = String(value);
      input.dispatchEvent(new Event('input'));
    }, rate);
  const verified = async () => {
    const box = page.locator('#verify.ok');
    await box.waitFor({ timeout: 10_000 });
    return { actual: Number(await box.getAttribute('data-actual')), expected: Number(await box.getAttribute('data-expected')) };
  };

  it('runs an example, survives a crash exactly-once and charts its checkpoints', async () => {
    await page.goto(url);
    await page.waitForFunction(() => document.querySelector('[data-field="status"]')?.textContent === 'running');
    await setRate(300);
    await page.waitForFunction(() => Number(document.querySelector('[data-field="offset"]')?.textContent) > 400, undefined, { timeout: 15_000 });
    await page.waitForFunction(() => Number(document.querySelector('#timeline')?.getAttribute('data-points')) >= 2, undefined, { timeout: 15_000 });

    await page.click('#crash');
    await page.waitForFunction(() => document.querySelector('[data-field="restarts"]')?.textContent === '1', undefined, { timeout: 10_000 });
    expect(await page.locator('#output li.restart', { hasText: 'restart 1' }).count()).toBe(1);
    await page.waitForFunction(() => Number(document.querySelector('[data-field="offset"]')?.textContent) > 600, undefined, { timeout: 15_000 });

    // Still the input: the sum of all word counts equals the words in the records read, none lost, none twice.
    await setRate(0);
    const { actual, expected } = await verified();
    expect(actual).toBe(expected);
    expect(actual).toBeGreaterThan(600);
    expect(await field('status')).toBe('running');
    expect(Number(await page.locator('#timeline').getAttribute('data-points'))).toBeGreaterThanOrEqual(2);
    expect(await page.locator('#state table tr').count()).toBeGreaterThan(3);
    await page.screenshot({ path: await artifactPath('playground.png'), fullPage: true });
    expect(errors).toEqual([]);
  });

  it('takes a savepoint and restores from it', async () => {
    await page.click('#savepoint');
    await page.waitForFunction(() => document.querySelector('[data-field="savepoint"]')?.textContent?.includes('savepoint-word-count-'));
    const { actual: atSavepoint } = await verified();
    await setRate(300);
    await page.waitForFunction((n) => Number(document.querySelector('#verify')?.getAttribute('data-actual')) > n + 200, atSavepoint, { timeout: 15_000 });
    await setRate(0);
    await page.click('#restore');
    await page.waitForFunction(() => document.querySelector('[data-field="restored"]')?.textContent?.startsWith('savepoint'));
    // A restored state becomes queryable once its operator sees a record: let a few through, then hold still.
    await setRate(20);
    await page.waitForFunction((n) => Number(document.querySelector('[data-field="offset"]')?.textContent) > n, 0);
    await setRate(0);
    await page.waitForFunction(() => document.querySelector('[data-field="status"]')?.textContent === 'running');
    const { actual, expected } = await verified();
    expect(actual).toBe(expected);
    expect(actual).toBeLessThan(atSavepoint + 200);
  });

  it('resumes from IndexedDB after a reload', async () => {
    await setRate(200);
    await page.waitForFunction(() => Number(document.querySelector('[data-field="last-checkpoint"]')?.textContent?.match(/#(\d+)/)?.[1]) > 0, undefined, { timeout: 15_000 });
    await setRate(0);
    // The rate (0) is kept in localStorage; the restored job resumes exactly where its checkpoint left off.
    await page.waitForTimeout(1_500);
    await page.reload();
    await page.waitForFunction(() => document.querySelector('[data-field="restored"]')?.textContent?.startsWith('checkpoint #'));
    await page.waitForFunction(() => document.querySelector('[data-field="status"]')?.textContent === 'running');
    await page.waitForFunction(() => Number(document.querySelector('[data-field="offset"]')?.textContent) > 0);
    const resumedAt = Number(await field('offset'));
    await setRate(20);
    await page.waitForFunction((n) => Number(document.querySelector('[data-field="offset"]')?.textContent) > n, resumedAt);
    await setRate(0);
    const { actual, expected } = await verified();
    expect(actual).toBe(expected);
    expect(actual).toBeGreaterThan(0);
    expect(Number(await page.locator('#timeline').getAttribute('data-points'))).toBeGreaterThanOrEqual(1);
  });

  it('shows errors in user code inline with their line', async () => {
    await page.click('#editor .cm-content');
    await page.keyboard.press('Control+End');
    await page.keyboard.type('\nconst broken = ;');
    await page.click('#run');
    const error = page.locator('#error');
    await error.waitFor({ state: 'visible' });
    const lines = (await page.locator('#editor .cm-line').count());
    expect(await error.innerText()).toMatch(new RegExp(`^line ${lines}: SyntaxError`));
    expect(await page.locator('.cm-error-line').count()).toBe(1);

    await page.click('#editor .cm-content');
    await page.keyboard.press('Control+z');
    await page.keyboard.type('\nctx.input().pipe(weir.map((e) => e.nope.boom), ctx.output());');
    await setRate(50);
    await page.click('#run');
    await page.waitForFunction(() => /TypeError/.test(document.querySelector('#error')?.textContent ?? ''), undefined, { timeout: 15_000 });
    expect(await error.innerText()).toMatch(new RegExp(`^line ${lines}: TypeError: .*boom.*in a function of your job`));
    expect(await page.locator('h1').innerText()).toMatch(/weir/);
    await page.screenshot({ path: await artifactPath('playground-error.png') });
  });
});
