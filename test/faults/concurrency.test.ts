import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import superjson from 'superjson';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointDirectoryLockedError, collect, createJob, fromArray, keyBy, map, process as processRecords, valueState } from 'weir';
import { fsCheckpointStorage, serveQueryableState } from 'weir/node';
import { pausableSource, readings, sumsJob } from '../checkpoint/jobFixtures';

// Two runs of one job on one checkpoint directory must not both write it (each would delete the other's
// checkpoints as retention): the second refuses with CheckpointDirectoryLockedError, while a lock left by a process
// that died is taken over. And the queryable state server under concurrent load while the job checkpoints and
// restarts: every answer is a value or a typed 503, never a crash.

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-concurrency-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited. */
function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', '']);
    child.on('error', reject);
    child.on('exit', () => resolve(child.pid!));
  });
}

async function writeLock(owner: { pid: number; hostname: string }, ageMs = 0): Promise<string> {
  const file = join(dir, 'sums', '.lock');
  await mkdir(join(dir, 'sums'), { recursive: true });
  await writeFile(file, JSON.stringify({ ...owner, token: 'abandoned', since: new Date().toISOString() }));
  const at = new Date(Date.now() - ageMs);
  await utimes(file, at, at);
  return file;
}

describe('one run per checkpoint directory and job name', () => {
  it('a second job of the same name on the same directory refuses to start; once the first ended, it starts', async () => {
    const gate = pausableSource(readings, [50]);
    const first = sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir) } }, gate.source).job.start();
    await gate.reached(50);
    const second = sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir) } }, fromArray(readings)).job.start({ restore: 'latest' });
    const error = await second.done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointDirectoryLockedError);
    expect((error as Error).message).toMatch(new RegExp(`job 'sums'.*in use by process ${process.pid} on .*\\.lock`));
    // Another job name in the same directory is another lock.
    await sumsJob({ name: 'other', checkpoints: { storage: fsCheckpointStorage(dir) } }, fromArray(readings)).job.start().done;
    gate.releaseAll();
    await first.done;
    const third = await sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir) } }, fromArray(readings)).job.start({ restore: 'latest' }).done;
    expect(third.restoredFrom).toMatch(/chk-\d+$/);
  });

  it('takes over the lock of a process that died (SIGKILL leaves it behind)', async () => {
    await writeLock({ pid: await deadPid(), hostname: hostname() });
    await sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir) } }, fromArray(readings)).job.start().done;
  });

  it('takes over a lock of another host once its heartbeat is stale, not before', async () => {
    const file = await writeLock({ pid: 1, hostname: 'elsewhere' }, 0);
    const fresh = sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir, { lock: { staleMs: 5_000 } }) } }, fromArray(readings)).job.start();
    await expect(fresh.done).rejects.toThrow(/in use by process 1 on elsewhere/);
    const stale = new Date(Date.now() - 60_000);
    await utimes(file, stale, stale);
    await sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir, { lock: { staleMs: 5_000 } }) } }, fromArray(readings)).job.start().done;
  });

  it('the holder keeps its heartbeat fresh and removes the lock when it ends', async () => {
    const gate = pausableSource(readings, [50]);
    const running = sumsJob({ checkpoints: { storage: fsCheckpointStorage(dir, { lock: { heartbeatMs: 20 } }) } }, gate.source).job.start();
    await gate.reached(50);
    const file = join(dir, 'sums', '.lock');
    const owner = JSON.parse(await readFile(file, 'utf8')) as { pid: number };
    expect(owner.pid).toBe(process.pid);
    const old = new Date(Date.now() - 60_000);
    await utimes(file, old, old);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { stat } = await import('node:fs/promises');
    expect(Date.now() - (await stat(file)).mtimeMs).toBeLessThan(5_000);
    gate.releaseAll();
    await running.done;
    await expect(readFile(file)).rejects.toThrow(/ENOENT/);
  });
});

describe('queryable state under concurrent load while the job checkpoints and restarts', () => {
  it('answers every query with a value or a typed 503, through checkpoints and a restart', { timeout: 60_000 }, async () => {
    const RECORDS = 40_000;
    const counts = valueState<number>('count', { default: 0, queryable: 'count' });
    const job = createJob({
      name: 'loaded',
      checkpoints: { storage: fsCheckpointStorage(dir), interval: 20 },
      restart: { strategy: 'fixed-delay', attempts: 3, delay: 50 },
      chunkSize: 200,
    });
    let failed = false;
    let spin = 0;
    job
      .source(fromArray(Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i % 10}`, i }))), { uid: 'in' })
      .pipe(
        map((r) => {
          for (let i = 0; i < 2000; i++) spin = (spin * 31 + i) | 0;
          // One failure half-way: the job restarts from its latest checkpoint while clients keep asking.
          if (r.i === RECORDS / 2 && !failed) {
            failed = true;
            throw new Error('boom');
          }
          return r;
        }),
        keyBy((r) => r.key),
        processRecords<{ key: string; i: number }, never>({ onElement(_r, ctx) { ctx.state(counts).update((ctx.state(counts).value() ?? 0) + 1); } }, { uid: 'count' }),
        collect<never>().sink({ uid: 'out' }),
      );
    const running = job.start();
    const server = await serveQueryableState(running, { port: 0, rateLimit: false, queryTimeoutMs: 200 });
    const statuses = new Map<number, number>();
    const wrong: string[] = [];
    let ended = false;
    const finished = running.done.finally(() => (ended = true));
    await Promise.all(
      Array.from({ length: 8 }, async (_, client) => {
        while (!ended) {
          const response = await fetch(`${server.url}/v1/states/count/${client % 2 === 0 ? 'get?key=k3' : 'keys?limit=5'}`);
          const text = await response.text();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (response.status === 200) {
            const body = superjson.parse<{ value?: unknown; keys?: unknown[] }>(text);
            const ok = client % 2 === 0 ? body.value === undefined || (Number.isInteger(body.value) && (body.value as number) <= RECORDS / 10) : Array.isArray(body.keys) && body.keys.length <= 5;
            if (!ok) wrong.push(text);
          } else if (!(response.status === 503 || (response.status === 404 && /unknown-state/.test(text)))) {
            wrong.push(`${response.status} ${text}`);
          }
        }
      }),
    );
    const result = await finished;
    await server.close();
    expect(result.restarts).toBe(1);
    expect(result.checkpoints.length).toBeGreaterThan(1);
    expect(wrong).toEqual([]);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(10);
    console.log(`query server under load: ${Array.from(statuses, ([status, n]) => `${n}× ${status}`).join(', ')}, ${result.checkpoints.length} checkpoints, ${result.restarts} restart`);
  });
});
