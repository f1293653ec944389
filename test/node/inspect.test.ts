import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsCheckpointStorage } from 'weir/node';
import { pausableSource } from '../checkpoint/fixtures';
import { checkpointVisits, visits, visitsJob } from '../query/fixtures';

const bin = fileURLToPath(new URL('../../bin/weir.js', import.meta.url));

/** Runs the `weir` bin as users do; resolves with its exit code and output, even when it fails. */
async function weir(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args], { encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'weir-inspect-'));
  await checkpointVisits(fsCheckpointStorage(root));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Summary {
  kind: string;
  job: string;
  id: number;
  path: string;
  status: string;
  error?: string;
  persistedBytes: number;
  fullBytes: number;
  operators: { uid: string; role: string; states: { name: string; kind: string; serializer: string; keys: number; entries: number; bytes: number; keyGroups: [number, number][] }[] }[];
}

interface Report {
  location: string;
  jobs: { job: string; checkpoints: Summary[]; savepoints: Summary[] }[];
}

describe('weir inspect', () => {
  it('prints jobs, checkpoints, operators and states as JSON', async () => {
    const { code, stdout, stderr } = await weir('inspect', root, '--json');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as Report;
    expect(report.jobs.map((j) => j.job)).toEqual(['visits']);
    const checkpoints = report.jobs[0]!.checkpoints;
    expect(checkpoints.map((c) => [c.kind, c.id, c.status])).toEqual([['checkpoint', 1, 'complete'], ['checkpoint', 2, 'complete'], ['checkpoint', 3, 'complete']]);
    expect(report.jobs[0]!.savepoints).toEqual([]);
    const first = checkpoints[0]!;
    expect(first.persistedBytes).toBe(first.fullBytes);
    const perUser = first.operators.find((o) => o.uid === 'per-user')!;
    expect(perUser.role).toBe('operator');
    const count = perUser.states.find((s) => s.name === 'count')!;
    expect(count).toMatchObject({ kind: 'value', serializer: 'auto', keys: 12, entries: 12 });
    expect(count.keyGroups.reduce((sum, [, keys]) => sum + keys, 0)).toBe(12);
    expect(perUser.states.find((s) => s.name === 'pages')).toMatchObject({ kind: 'map', keys: 12 });
    expect(perUser.states.find((s) => s.name === 'avg-ms')).toMatchObject({ kind: 'aggregating', keys: 12 });
    expect(first.operators.find((o) => o.uid === 'visits')!.role).toBe('source');
  });

  it('prints a readable report for a job directory and for one checkpoint', async () => {
    const job = await weir('inspect', join(root, 'visits'));
    expect(job.code).toBe(0);
    expect(job.stdout).toMatch(/job visits: 3 checkpoints, 0 savepoints/);
    expect(job.stdout).toMatch(/ID\s+KIND\s+STATUS\s+TIME\s+DURATION\s+PERSISTED\s+FULL SIZE/);
    expect(job.stdout).toMatch(/\n\s+1\s+checkpoint\s+complete\s+\d{4}-\d\d-\d\dT/);
    expect(job.stdout).toMatch(/operator per-user \(operator\)/);
    expect(job.stdout).toMatch(/count\s+value\s+auto v1\s+12\s+12/);
    // No progress bar when stderr is not a terminal.
    expect(job.stderr).toBe('');

    const one = await weir('inspect', join(root, 'visits', 'chk-2'), '--json');
    const report = JSON.parse(one.stdout) as Report;
    expect(report.jobs[0]!.checkpoints.map((c) => c.id)).toEqual([2]);
  });

  it('shows a corrupted file with its error, and an incomplete checkpoint', async () => {
    const damaged = await mkdtemp(join(tmpdir(), 'weir-inspect-damaged-'));
    try {
      const paused = pausableSource(visits, [20]);
      const { job } = visitsJob(paused.source, { storage: fsCheckpointStorage(damaged), chunkSize: 10 });
      const running = job.start();
      await paused.reached(20);
      await running.checkpoint();
      paused.release(20);
      await running.done;
      const file = join(damaged, 'visits', 'chk-1', 'per-user.0.kg-0-127');
      const bytes = await readFile(file);
      bytes[bytes.length - 3]! ^= 0x55;
      await writeFile(file, bytes);
      // A checkpoint that never got its _metadata (a crash mid-checkpoint).
      await mkdir(join(damaged, 'visits', 'chk-7'));

      const text = await weir('inspect', damaged);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/1\s+checkpoint\s+corrupted/);
      expect(text.stdout).toMatch(/per-user\.0\.kg-0-127: checksum mismatch/);
      expect(text.stdout).toMatch(/7\s+checkpoint\s+incomplete/);
      const report = JSON.parse((await weir('inspect', damaged, '--json')).stdout) as Report;
      expect(report.jobs[0]!.checkpoints).toMatchObject([
        { id: 1, status: 'corrupted', error: expect.stringMatching(/per-user\.0\.kg-0-127: checksum mismatch/) },
        { id: 2, status: 'complete' },
        { id: 7, status: 'incomplete' },
      ]);
    } finally {
      await rm(damaged, { recursive: true, force: true });
    }
  });

  it('lists savepoints with their job, and reads a savepoint directory itself', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weir-inspect-savepoint-'));
    try {
      // Checkpoint 1 after 30 visits, savepoint 2 right after it (into the default `savepoints` directory), and the
      // final checkpoint 3.
      const paused = pausableSource(visits, [30]);
      const { job } = visitsJob(paused.source, { storage: fsCheckpointStorage(dir), chunkSize: 10 });
      const running = job.start();
      await paused.reached(30);
      await running.checkpoint();
      const savepoint = await running.savepoint();
      paused.release(30);
      await running.done;
      const name = basename(savepoint.path);
      expect(name).toMatch(/^savepoint-visits-2-[0-9a-f]{8}$/);

      const report = JSON.parse((await weir('inspect', dir, '--json')).stdout) as Report;
      const [visitsReport] = report.jobs;
      expect(report.jobs.map((j) => j.job)).toEqual(['visits']);
      expect(visitsReport!.checkpoints.map((c) => [c.kind, c.id])).toEqual([['checkpoint', 1], ['checkpoint', 3]]);
      const [saved] = visitsReport!.savepoints;
      expect(visitsReport!.savepoints).toHaveLength(1);
      expect(saved).toMatchObject({ kind: 'savepoint', job: 'visits', id: 2, path: `savepoints/${name}`, status: 'complete' });
      // A savepoint is self-contained: it wrote every byte it holds.
      expect(saved!.persistedBytes).toBe(saved!.fullBytes);
      const count = saved!.operators.find((o) => o.uid === 'per-user')!.states.find((s) => s.name === 'count');
      expect(count).toMatchObject({ kind: 'value', keys: 12, entries: 12 });

      const text = await weir('inspect', dir);
      expect(text.stdout).toMatch(/job visits: 2 checkpoints, 1 savepoint\n/);
      expect(text.stdout).toMatch(/\n\s+1\s+checkpoint\s+complete.*\n\s+2\s+savepoint\s+complete\s+\d{4}-.*\n\s+3\s+checkpoint\s+complete/);
      expect(text.stdout).toContain(`savepoint savepoints/${name}: complete`);

      const one = await weir('inspect', savepoint.path);
      expect(one.code).toBe(0);
      expect(one.stdout).toMatch(/job visits: 0 checkpoints, 1 savepoint\n/);
      expect(one.stdout).toMatch(/count\s+value\s+auto v1\s+12\s+12/);
      const oneJson = JSON.parse((await weir('inspect', savepoint.path, '--json')).stdout) as Report;
      expect(oneJson.jobs).toMatchObject([{ job: 'visits', checkpoints: [], savepoints: [{ kind: 'savepoint', id: 2, path: name, status: 'complete' }] }]);

      // The job's directory brings the job's savepoints in the same root along.
      const jobOnly = JSON.parse((await weir('inspect', join(dir, 'visits'), '--json')).stdout) as Report;
      expect(jobOnly.jobs[0]!.savepoints.map((s) => s.path)).toEqual([`savepoints/${name}`]);

      // Renamed, a savepoint can still be restored from, but the inspector cannot tell what it is.
      await cp(savepoint.path, join(dir, 'before-upgrade'), { recursive: true });
      const renamed = await weir('inspect', join(dir, 'before-upgrade'));
      expect(renamed.code).toBe(1);
      expect(renamed.stderr).toMatch(/named neither chk-<id> nor savepoint-<job>-<id>-<random>/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('explains bad usage', async () => {
    expect((await weir('inspect', join(root, 'missing'))).stderr).toMatch(/does not exist/);
    expect((await weir('inspect', join(root, 'missing'))).code).toBe(1);
    expect((await weir('frobnicate')).code).toBe(2);
    expect((await weir('inspect', root, '--serve', '--json')).stderr).toMatch(/exclude each other/);
    expect((await weir('--help')).stdout).toMatch(/usage: weir inspect/);
  });
});
