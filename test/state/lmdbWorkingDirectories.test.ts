import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_MAX_PARALLELISM } from 'weir';
import { lmdbStateBackend } from 'weir/node';
import { ROOT, bundleFixture, runChild, type BundledFixture } from '../support/childJob';

// Working directories of LMDB backends whose process was killed (SIGKILL: no dispose) are removed by the next start
// under the same path; those of live processes, of other hosts and of the older naming are left alone.

let path: string;
let bundle: BundledFixture;
const live: ChildProcess[] = [];
beforeAll(async () => {
  path = await mkdtemp(join(tmpdir(), 'weir-lmdb-workdirs-'));
  bundle = await bundleFixture(join(ROOT, 'test/state/fixtures/lmdbHolder.ts'));
});
afterAll(async () => {
  live.forEach((child) => child.kill('SIGKILL'));
  await rm(path, { recursive: true, force: true });
  await bundle.remove();
});

/** Starts a holder that stays alive; resolves once its working directory is written. */
function holdAlive(): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bundle.file, path], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    live.push(child);
    let out = '';
    child.stdout!.on('data', (data: Buffer) => {
      out += data.toString();
      if (out.includes('hook holding\n')) resolve(child);
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the holder exited with ${code} before holding`)));
  });
}

const ofPid = (names: string[], pid: number) => names.filter((name) => name.split('-')[3] === String(pid));

it('removes the working directories of killed processes on start, never those of a live one', async () => {
  const alive = await holdAlive();
  const killed: number[] = [];
  for (let run = 0; run < 4; run++) {
    const result = await runChild(bundle, [path], { onHook: { name: 'holding', skip: 0 } });
    expect(result.killed).toBe(true);
    killed.push(Number(/^pid (\d+)$/m.exec(result.stdout)![1]));
    // Each start removed what the runs killed before it left; the live holder's directory stays throughout.
    const names = await readdir(path);
    expect(names).toHaveLength(2);
    expect(ofPid(names, killed.at(-1)!)).toHaveLength(1);
    expect(ofPid(names, alive.pid!)).toHaveLength(1);
  }
  const before = await readdir(path);
  const host = ofPid(before, alive.pid!)[0]!.split('-')[2]!;
  // A directory of this pid from an earlier process (another start time: a container's next run reuses its pid),
  // one of another host, and one named the older way.
  const reused = `weir-lmdb-${host}-${process.pid}-1-old`;
  const otherHost = `weir-lmdb-${host === '00000000' ? '00000001' : '00000000'}-1-1-elsewhere`;
  const older = 'weir-lmdb-Ab12Cd';
  for (const name of [reused, otherHost, older]) await mkdir(join(path, name));

  const backend = lmdbStateBackend({ path }).createKeyedBackend({ uid: 'op', maxParallelism: DEFAULT_MAX_PARALLELISM, keyGroupRange: { start: 0, end: 127 } });
  const after = await readdir(path);
  expect(ofPid(after, killed.at(-1)!)).toEqual([]);
  expect(after).not.toContain(reused);
  expect(ofPid(after, alive.pid!)).toEqual(ofPid(before, alive.pid!));
  expect(after).toEqual(expect.arrayContaining([otherHost, older]));
  expect(ofPid(after, process.pid)).toHaveLength(1);
  expect(after).toHaveLength(4);
  backend.dispose();
  expect(ofPid(await readdir(path), process.pid)).toEqual([]);
});
