import { rm } from 'node:fs/promises';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { PreviewServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLES } from '../../playground/src/examples';
import { artifactPath, buildPlayground, chromiumPath, launchChromium, previewPlayground } from './e2eSupport';

// The playground in Chromium. Every example, on IndexedDB checkpoints: run it, crash it and check that state is
// exactly-once after the restore, take a savepoint and restore it, reload and resume, stop. Then the page's own
// features: the status after a crash, Reset state, the way out of a NonRestoredStateError, the chart's markers and
// axes, and user-code errors. Every wait is for a state of the page (generous timeouts: the machine may be loaded).
const WAIT = 60_000;

// A test waits for several states in turn: it is given room for some of them to take long.
describe.skipIf(!chromiumPath)('playground (Chromium)', { timeout: 5 * WAIT }, () => {
  let outDir: string;
  let server: PreviewServer;
  let url: string;
  let browser: Browser;

  beforeAll(async () => {
    outDir = await buildPlayground();
    ({ server, url } = await previewPlayground(outDir));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  /** A page in a fresh browser context (its own IndexedDB and localStorage), opened on an example. */
  async function openPlayground(example: string): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    // The example to open, unless the page already chose one (reloads keep what the page stored).
    await context.addInitScript((id) => {
      if (!localStorage.getItem('weir-playground:example')) localStorage.setItem('weir-playground:example', id);
    }, example);
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(url);
    await waitField(page, 'job', (text, id) => text === id, example);
    await waitField(page, 'status', (text) => text === 'running');
    return { context, page, errors };
  }

  const field = (page: Page, name: string) => page.locator(`[data-field="${name}"]`).innerText();
  /** Waits until the status field `name` satisfies `test` (run in the page, with `arg`). */
  const waitField = <A>(page: Page, name: string, test: (text: string, arg: A) => boolean, arg?: A) =>
    page.waitForFunction(
      ([name, source, arg]) => new Function('text', 'arg', `return (${source})(text, arg)`)(document.querySelector(`[data-field="${name}"]`)?.textContent ?? '', arg),
      [name, test.toString(), arg] as const,
    );
  const offset = async (page: Page) => Number(await field(page, 'offset'));
  const offsetAbove = (page: Page, n: number) => waitField(page, 'offset', (text, n) => Number(text) > n, n);
  const lastCheckpointId = async (page: Page) => Number((await field(page, 'last-checkpoint')).match(/^#(\d+)/)?.[1] ?? 0);
  const checkpointAtLeast = (page: Page, id: number) => waitField(page, 'last-checkpoint', (text, id) => Number(text.match(/^#(\d+)/)?.[1] ?? 0) >= id, id);
  const setRate = (page: Page, rate: number) =>
    page.locator('#rate').evaluate((input: HTMLInputElement, value) => {
      input.value = String(value);
      input.dispatchEvent(new Event('input'));
    }, rate);
  /** Sets the rate to 0 and waits until the reader saw it: no record comes after that. */
  const hold = async (page: Page) => {
    await setRate(page, 0);
    await waitField(page, 'input', (text) => text === 'paused');
  };
  /** The exactly-once check as the page computes it, once it describes the records read now (the input held). */
  const verified = async (page: Page) => {
    const result = await page.waitForFunction(() => {
      const box = document.querySelector<HTMLElement>('#verify');
      const paused = document.querySelector('[data-field="input"]')?.textContent === 'paused';
      const read = document.querySelector('[data-field="offset"]')?.textContent;
      if (!box || !paused || box.dataset.offset !== read || !/\b(ok|bad)\b/.test(box.className)) return undefined;
      return { ok: box.classList.contains('ok'), actual: Number(box.dataset.actual), expected: Number(box.dataset.expected), offset: Number(read), text: box.textContent };
    });
    return (await result.jsonValue())!;
  };
  /** Holds the input still and waits for a checkpoint triggered after that, so that a restore resumes exactly here. */
  const stillAndCheckpointed = async (page: Page) => {
    await hold(page);
    const still = await offset(page);
    await checkpointAtLeast(page, (await lastCheckpointId(page)) + 2);
    expect(await offset(page)).toBe(still);
    return still;
  };
  const markers = (page: Page, kind: string) => page.locator(`#timeline .marker[data-kind="${kind}"]`);

  it('runs a job on 2 module Web Workers, shows which worker owns which key groups, and restores after a crash', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    await context.addInitScript(() => {
      localStorage.setItem('weir-playground:example', 'word-count');
      localStorage.setItem('weir-playground:workers', '2');
    });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(url);
    await waitField(page, 'status', (text) => text === 'running');
    await waitField(page, 'restored', (text) => text === 'fresh start');
    await setRate(page, 300);
    await offsetAbove(page, 400);
    await page.waitForFunction(() => Number(document.querySelector('#timeline')?.getAttribute('data-points')) >= 2);
    // Two keyed instances, one in each worker, owning the two halves of the key groups.
    expect(await page.locator('#workers tr[data-worker="0"]').count()).toBeGreaterThan(0);
    expect(await page.locator('#workers tr[data-worker="1"]').count()).toBeGreaterThan(0);
    expect(await page.locator('#workers').innerText()).toMatch(/0–63 of 128[\s\S]*64–127 of 128/);
    expect(await page.locator('#output li').count()).toBeGreaterThan(0);

    const before = await lastCheckpointId(page);
    await page.click('#crash');
    await waitField(page, 'restarts', (text) => text === '1');
    await waitField(page, 'restored', (text) => text.startsWith('checkpoint #'));
    expect(Number((await field(page, 'restored')).match(/^checkpoint #(\d+)/)![1])).toBeGreaterThanOrEqual(before);
    await offsetAbove(page, (await offset(page)) + 100);
    await page.screenshot({ path: await artifactPath('playground-workers.png'), fullPage: true });
    expect(await page.locator('#error').isHidden()).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });

  describe.each(EXAMPLES.map((example) => [example.id, example] as const))('example %s', (id) => {
    let context: BrowserContext;
    let page: Page;
    let errors: string[];
    let savepointOffset = 0;

    beforeAll(async () => {
      ({ context, page, errors } = await openPlayground(id));
    });
    afterAll(async () => {
      await context?.close();
    });

    it('runs, checkpoints, and after a crash restores its last checkpoint exactly-once', async () => {
      await waitField(page, 'restored', (text) => text === 'fresh start');
      await setRate(page, 300);
      await offsetAbove(page, 400);
      // A branch without a sink (state read through queries) acknowledges barriers too: checkpoints complete.
      await page.waitForFunction(() => Number(document.querySelector('#timeline')?.getAttribute('data-points')) >= 2);
      const before = await lastCheckpointId(page);

      await page.click('#crash');
      await waitField(page, 'restarts', (text) => text === '1');
      await waitField(page, 'restored', (text) => text.startsWith('checkpoint #'));
      const restored = Number((await field(page, 'restored')).match(/^checkpoint #(\d+)/)![1]);
      expect(restored).toBeGreaterThanOrEqual(before);
      expect(await page.locator('#output li.restart', { hasText: `restart 1: restored checkpoint #${restored}` }).count()).toBe(1);
      await offsetAbove(page, 600);

      // Input held still: the queryable state's sum equals the sum over the records read, none lost, none twice.
      await hold(page);
      const check = await verified(page);
      expect(check).toMatchObject({ ok: true });
      expect(check.actual).toBe(check.expected);
      expect(check.offset).toBeGreaterThan(600);
      expect(await field(page, 'status')).toBe('running');
      expect(await page.locator('#state table tr').count()).toBeGreaterThan(3);
      await page.screenshot({ path: await artifactPath(`playground-${id}.png`), fullPage: true });
      expect(await page.locator('#error').isHidden()).toBe(true);
      expect(errors).toEqual([]);
    });

    it('takes a savepoint and restores from it', async () => {
      savepointOffset = await offset(page);
      await page.click('#savepoint');
      await waitField(page, 'savepoint', (text, id) => text.includes(`savepoint-${id}-`), id);
      expect(await markers(page, 'savepoint').count()).toBe(1);
      await setRate(page, 300);
      await offsetAbove(page, savepointOffset + 200);
      await hold(page);

      await page.click('#restore');
      await waitField(page, 'restored', (text) => text.startsWith('savepoint '));
      await waitField(page, 'status', (text) => text === 'running');
      // The job resumes at the savepoint's offset (the input was still when it was taken).
      expect(await offset(page)).toBe(savepointOffset);
      // A restored state becomes queryable once its operator sees a record: let a few through, then hold still.
      await setRate(page, 20);
      await offsetAbove(page, savepointOffset);
      await hold(page);
      const check = await verified(page);
      expect(check).toMatchObject({ ok: true });
      expect(check.actual).toBe(check.expected);
      expect(check.offset).toBeLessThan(savepointOffset + 200);
    });

    it('resumes from IndexedDB after a reload', async () => {
      await setRate(page, 200);
      await offsetAbove(page, savepointOffset + 100);
      const still = await stillAndCheckpointed(page);
      // The rate (0) is kept in localStorage: the reloaded job resumes exactly where its checkpoint left off.
      await page.reload();
      await waitField(page, 'restored', (text) => text.startsWith('checkpoint #'));
      await waitField(page, 'status', (text) => text === 'running');
      expect(await offset(page)).toBe(still);
      expect(await markers(page, 'restore').count()).toBe(1);
      await setRate(page, 20);
      await offsetAbove(page, still);
      await hold(page);
      const check = await verified(page);
      expect(check).toMatchObject({ ok: true });
      expect(check.actual).toBe(check.expected);
    });

    it('stops: the stop finishes', async () => {
      await setRate(page, 100);
      await offsetAbove(page, (await offset(page)) + 20);
      await page.click('#stop');
      await waitField(page, 'status', (text) => text === 'stopped');
      expect(await page.locator('#error').isHidden()).toBe(true);
      expect(errors).toEqual([]);
    });
  });

  describe('the page', () => {
    it('after a crash, names the checkpoint the current attempt restored, not where the run started', async () => {
      const { context, page } = await openPlayground('word-count');
      await setRate(page, 300);
      await checkpointAtLeast(page, 2);
      await setRate(page, 0);
      await page.reload();
      await waitField(page, 'restored', (text) => text.startsWith('checkpoint #'));
      const startedFrom = Number((await field(page, 'restored')).match(/#(\d+)/)![1]);
      await setRate(page, 300);
      await checkpointAtLeast(page, startedFrom + 2);
      await page.click('#crash');
      await waitField(page, 'restarts', (text) => text === '1');
      await waitField(page, 'restored', (text, from) => Number(text.match(/^checkpoint #(\d+)/)?.[1]) >= from + 2, startedFrom);
      const restored = Number((await field(page, 'restored')).match(/#(\d+)/)![1]);
      // The chart marks both restores: the reload's and the restart's.
      expect(await markers(page, 'restore').evaluateAll((nodes) => nodes.map((node) => Number((node as HTMLElement).dataset.at)))).toEqual([startedFrom, restored]);
      await context.close();
    });

    it('Reset state deletes checkpoints and savepoints but keeps the edited code', async () => {
      const { context, page } = await openPlayground('word-count');
      await page.click('#editor .cm-content');
      await page.keyboard.press('Control+End');
      await page.keyboard.type('\n// my edit');
      await setRate(page, 300);
      await checkpointAtLeast(page, 1);
      await page.click('#savepoint');
      await waitField(page, 'savepoint', (text) => text.includes('savepoint-word-count-'));

      await page.click('#reset');
      await waitField(page, 'savepoint', (text) => text === '-');
      await waitField(page, 'status', (text) => text === 'running');
      expect(await page.locator('#editor .cm-content').innerText()).toContain('// my edit');
      await waitField(page, 'restored', (text) => text === 'fresh start');
      expect(await page.locator('#timeline').getAttribute('data-points')).toBe('0');
      await page.reload();
      await waitField(page, 'status', (text) => text === 'running');
      expect(await page.locator('#editor .cm-content').innerText()).toContain('// my edit');
      await context.close();
    });

    it('after a uid edit, offers to restore without the removed operators’ state (allowNonRestoredState)', async () => {
      const { context, page, errors } = await openPlayground('word-count');
      await setRate(page, 300);
      await offsetAbove(page, 200);
      await checkpointAtLeast(page, 1);

      const code = EXAMPLES.find((e) => e.id === 'word-count')!.code;
      expect(code).toContain("{ uid: 'word-count' }");
      await page.click('#editor .cm-content');
      await page.keyboard.press('Control+a');
      await page.keyboard.insertText(code.replace("{ uid: 'word-count' }", "{ uid: 'word-count-v2' }"));
      await page.click('#run');
      const error = page.locator('#error');
      await error.waitFor({ state: 'visible' });
      await waitField(page, 'status', (text) => text === 'failed');
      const message = await error.innerText();
      expect(message).toMatch(/holds state for operators this job does not have: 'word-count'/);
      // The advice is what the page can do, not an API option.
      expect(message).not.toMatch(/allowNonRestoredState/);
      expect(message).toMatch(/uids back in the editor/);

      // Slowly, so that the restart line is still among the 150 newest output lines when it is looked for (at 300
      // records/s a loaded machine could push it out first).
      await setRate(page, 20);
      await page.click('#allow-non-restored');
      await waitField(page, 'status', (text) => text === 'running');
      await waitField(page, 'restored', (text) => /^checkpoint #\d+ \(IndexedDB\), state of removed operators dropped$/.test(text));
      expect(await error.isHidden()).toBe(true);
      expect(await page.locator('#output li.restart', { hasText: "does not have: 'word-count': restored without that state" }).count()).toBe(1);
      await setRate(page, 50);
      await offsetAbove(page, (await offset(page)) + 20);
      await hold(page);
      // The renamed operator counts from the restore on: exactly once since then.
      const check = await verified(page);
      expect(check).toMatchObject({ ok: true });
      expect(check.text).toMatch(/since the restore that dropped state/);
      expect(errors).toEqual([]);
      await context.close();
    });

    it('marks crashes, restores and savepoints on the chart, and builds its axes anew for another example', async () => {
      const { context, page } = await openPlayground('word-count');
      await setRate(page, 300);
      await checkpointAtLeast(page, 2);
      await page.click('#crash');
      await waitField(page, 'restarts', (text) => text === '1');
      await markers(page, 'restore').waitFor();
      await page.click('#savepoint');
      await waitField(page, 'savepoint', (text) => text.includes('savepoint-word-count-'));
      expect(await markers(page, 'crash').count()).toBe(1);
      expect(await markers(page, 'restore').count()).toBe(1);
      expect(await markers(page, 'savepoint').count()).toBe(1);
      await checkpointAtLeast(page, 6);
      expect(Number(await page.locator('#timeline').getAttribute('data-x-max'))).toBeGreaterThanOrEqual(6);
      await page.locator('#timeline').screenshot({ path: await artifactPath('playground-timeline.png') });

      // Sessionization has no checkpoints yet: nothing of word count's ids or markers stays on the chart.
      await page.selectOption('#example', 'sessions');
      await waitField(page, 'job', (text) => text === 'sessions');
      expect(await page.locator('#timeline').getAttribute('data-points')).toBe('0');
      expect(await page.locator('#timeline .marker').count()).toBe(0);
      expect(await page.locator('#timeline .uplot').count()).toBe(1);
      await page.waitForFunction(() => Number(document.querySelector('#timeline')?.getAttribute('data-points')) >= 2);
      const xMax = Number(await page.locator('#timeline').getAttribute('data-x-max'));
      expect(xMax).toBeLessThan(6);
      expect(xMax).toBeGreaterThanOrEqual(2);
      await context.close();
    });

    it('shows errors in user code inline with their line', async () => {
      const { context, page } = await openPlayground('word-count');
      await page.click('#editor .cm-content');
      await page.keyboard.press('Control+End');
      await page.keyboard.type('\nconst broken = ;');
      await page.click('#run');
      const error = page.locator('#error');
      await error.waitFor({ state: 'visible' });
      const lines = await page.locator('#editor .cm-line').count();
      expect(await error.innerText()).toMatch(new RegExp(`^line ${lines}: SyntaxError`));
      expect(await page.locator('.cm-error-line').count()).toBe(1);

      await page.click('#editor .cm-content');
      await page.keyboard.press('Control+z');
      await page.keyboard.type('\nctx.input().pipe(weir.map((e) => e.nope.boom), ctx.output());');
      await setRate(page, 50);
      await page.click('#run');
      await page.waitForFunction(() => /TypeError/.test(document.querySelector('#error')?.textContent ?? ''));
      expect(await error.innerText()).toMatch(new RegExp(`^line ${lines}: TypeError: .*boom.*in a function of your job`));
      expect(await page.locator('h1').innerText()).toMatch(/weir/);
      await page.screenshot({ path: await artifactPath('playground-error.png') });
      await context.close();
    });
  });
});
