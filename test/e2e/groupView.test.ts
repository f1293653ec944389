import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEach } from 'weir';
import { assignedKeyGroups, keyGroupPartitions, natsObjectCheckpointStorage, natsSource, runScaleOut, serveScaleOutQueries, type QueryableStateServer, type ScaleOutRunner, type ScaleOutTask } from 'weir/node';
import { serverUp } from '../support/servers';
import { NATS, natsStreams, type NatsStreams } from '../node/connectors/natsStreams';
import { artifactPath, buildPlayground, chromiumPath, launchChromium } from './e2eSupport';

const up = await serverUp('nats');
const GROUPS = 4;

// The scale-out group's page as `serveScaleOutQueries(runner, { liveView })` serves it at /group: two members (two
// runners of this process) sharing four key groups, each task checkpointing and committing; the page draws each
// member with the key groups it owns and each key group with its owner and committed checkpoint.
describe.skipIf(!chromiumPath || !up)('scale-out group page (Chromium, served at /group)', () => {
  let uiDir: string;
  let streams: NatsStreams;
  let runners: ScaleOutRunner[] = [];
  let server: QueryableStateServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const id = randomBytes(4).toString('hex');
  const group = `weir-e2e-group-${id}`;
  const bucket = `weir-e2e-group-chk-${id}`;
  const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });

  beforeAll(async () => {
    uiDir = await buildPlayground();
    streams = await natsStreams();
    const input = await streams.create('wrgroup');
    const partitions = keyGroupPartitions({ prefix: input, topic: 'in', maxParallelism: GROUPS });
    const define = (task: ScaleOutTask) => {
      const job = task.createJob();
      job
        .source(natsSource({ servers: NATS, stream: input, subjects: partitions.subjects([task.keyGroup]), bounded: false }), { uid: 'in' })
        .pipe(forEach(() => undefined, { uid: 'drop' }));
      return job;
    };
    for (const member of ['m-a', 'm-b']) {
      runners.push(await runScaleOut(define, { servers: NATS, group, member, maxParallelism: GROUPS, lease: 10_000, checkpointInterval: 300, storage }));
    }
    server = await serveScaleOutQueries(runners[0]!, { servers: NATS, port: 0, storage, token: 'group-secret', liveView: { uiDir } });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    page.on('pageerror', (error) => errors.push(error.message));
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    for (const runner of runners) await runner.leave();
    runners = [];
    await storage.close();
    if (streams) {
      for (const name of [`KV_${group}-leases`, `KV_${group}-commits`, `OBJ_${bucket}`]) await streams.jsm.streams.delete(name).catch(() => undefined);
      await streams.removeAll();
    }
    if (uiDir) await rm(uiDir, { recursive: true, force: true });
  });

  it('serves the page without the token and the group only with it', async () => {
    const html = await fetch(`${server.url}/group`);
    expect(html.status).toBe(200);
    expect(await html.text()).toMatch(/weir scale-out group/);
    expect((await fetch(`${server.url}/v1/group`)).status).toBe(401);
    // A member's server has the group's page, not a job's.
    expect((await fetch(`${server.url}/job`)).status).not.toBe(200);
  });

  it('draws each member with the key groups it owns, and each key group with its owner and committed checkpoint', async () => {
    await page.goto(`${server.url}/group#token=group-secret`);
    // Every key group owned and committed (checkpoints every 300 ms).
    await page.waitForFunction((groups) => document.querySelectorAll('table.group-key-groups tr[data-checkpoint-id]').length === groups, GROUPS, { timeout: 60_000 });
    const members = ['m-a', 'm-b'];
    // m-a joined first and owned every key group: the page shows the hand-over to m-b once it is done.
    const owns = Object.fromEntries(members.map((member) => [member, assignedKeyGroups(member, members, GROUPS).join(',')]));
    await page.waitForFunction(
      (expected) => Object.entries(expected).every(([member, groups]) => document.querySelector(`table.group-members tr[data-member="${member}"]`)?.getAttribute('data-owns') === groups),
      owns,
      { timeout: 60_000 },
    );
    for (const member of members) {
      const row = page.locator(`table.group-members tr[data-member="${member}"]`);
      expect(await row.getAttribute('data-owns')).toBe(owns[member]);
    }
    for (let kg = 0; kg < GROUPS; kg++) {
      const row = page.locator(`table.group-key-groups tr[data-key-group="${kg}"]`);
      const owner = members.find((member) => assignedKeyGroups(member, members, GROUPS).includes(kg))!;
      expect(await row.getAttribute('data-owner')).toBe(owner);
      expect(await row.innerText()).toMatch(new RegExp(`^${kg}\\s+${owner}\\s+\\d+\\s+chk-\\d+\\s+\\d+\\.\\d s$`));
    }
    expect(await page.locator('.live-status').innerText()).toMatch(new RegExp(`group '${group}', answered by member 'm-a': 2 members, ${GROUPS} key groups owned`));
    await page.screenshot({ path: await artifactPath('group-view.png'), fullPage: true });
    expect(errors).toEqual([]);
  });
});
