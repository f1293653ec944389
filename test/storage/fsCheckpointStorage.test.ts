import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fsCheckpointStorage } from 'weir/node';
import { describeCheckpointStorage } from './checkpointStorage.conformance';

const freshDir = () => mkdtemp(join(tmpdir(), 'weir-fs-storage-'));

describeCheckpointStorage(
  'fs',
  async () => {
    const dir = await freshDir();
    return { storage: fsCheckpointStorage(dir), cleanup: () => rm(dir, { recursive: true, force: true }) };
  },
  { writeStructured: false, lock: true },
);

describeCheckpointStorage(
  'fs without a lock',
  async () => {
    const dir = await freshDir();
    return { storage: fsCheckpointStorage(dir, { lock: false }), cleanup: () => rm(dir, { recursive: true, force: true }) };
  },
  { writeStructured: false, lock: false },
);

describe('fsCheckpointStorage', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await freshDir();
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('leaves no temp files behind after writes', async () => {
    const storage = fsCheckpointStorage(dir);
    for (let i = 0; i < 5; i += 1) await storage.write('job/chk-1/state', new Uint8Array([i]));
    expect(await readdir(join(dir, 'job/chk-1'))).toEqual(['state']);
  });

  it('describes paths as absolute file-system paths and is located at its absolute root', () => {
    const storage = fsCheckpointStorage(dir);
    expect(storage.location).toBe(dir);
    expect(storage.describe?.('job/chk-1/_metadata')).toBe(join(dir, 'job', 'chk-1', '_metadata'));
    expect(isAbsolute(fsCheckpointStorage('relative/checkpoints').location)).toBe(true);
  });

  it('uses an absolute path as it is', async () => {
    const elsewhere = await freshDir();
    try {
      await fsCheckpointStorage(dir).write(join(elsewhere, 'file'), new Uint8Array([1, 2]));
      expect(await readdir(elsewhere)).toEqual(['file']);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('names the absolute path of a missing file', async () => {
    await expect(fsCheckpointStorage(dir).read('job/missing')).rejects.toThrow(join(dir, 'job', 'missing'));
  });
});
