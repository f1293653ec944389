import { clear, createStore, get, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { CheckpointCorruptedError, CheckpointNotFoundError, JobDefinitionError, StorageQuotaExceededError } from 'weir';
import { indexedDbCheckpointStorage } from 'weir/browser';
import { describeCheckpointStorage } from './checkpointStorage.conformance';
import { freshDbName, storageWithQuota } from '../browser/idbFixtures';

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

describeCheckpointStorage(
  'IndexedDB',
  async () => {
    const dbName = freshDbName();
    return { storage: indexedDbCheckpointStorage({ dbName }), cleanup: () => clear(createStore(dbName, 'files')) };
  },
  { writeStructured: true, lock: false },
);

describe('indexedDbCheckpointStorage', () => {
  it('is located at indexeddb://<dbName> and describes paths under it, which it also accepts as paths', async () => {
    const storage = indexedDbCheckpointStorage({ dbName: 'weir-described' });
    expect(storage.location).toBe('indexeddb://weir-described');
    expect(storage.describe?.('job//chk-1/_metadata')).toBe('indexeddb://weir-described/job/chk-1/_metadata');
    await storage.write('job/chk-1/_metadata', bytes('m'));
    expect(text(await storage.read('indexeddb://weir-described/job/chk-1/_metadata'))).toBe('m');
    expect(await storage.list('indexeddb://weir-described/job')).toEqual(['chk-1']);
  });

  it('names the database and path of a missing file', async () => {
    await expect(indexedDbCheckpointStorage({ dbName: 'weir-missing' }).read('job/none')).rejects.toThrow('indexeddb://weir-missing/job/none');
  });

  it('rejects a dbName that is not a non-empty string', () => {
    expect(() => indexedDbCheckpointStorage({ dbName: '' })).toThrow(JobDefinitionError);
    expect(() => indexedDbCheckpointStorage({ dbName: 42 as unknown as string })).toThrow(/dbName/);
  });

  it('keeps databases apart', async () => {
    const a = indexedDbCheckpointStorage({ dbName: freshDbName() });
    const b = indexedDbCheckpointStorage({ dbName: freshDbName() });
    await a.write('job/x', bytes('a'));
    expect(await b.list('job')).toEqual([]);
  });

  it('stores only the bytes of a view, not the whole buffer behind it', async () => {
    const storage = indexedDbCheckpointStorage({ dbName: freshDbName() });
    const buffer = bytes('0123456789');
    await storage.write('view', buffer.subarray(2, 5));
    const read = await storage.read('view');
    expect(read.buffer.byteLength).toBe(3);
    expect(text(read)).toBe('234');
  });

  it('stores a small file as its bytes and a large one as a Blob, and reads both back', async () => {
    const dbName = freshDbName();
    const storage = indexedDbCheckpointStorage({ dbName });
    const small = bytes('m'.repeat(64 * 1024));
    const large = bytes('s'.repeat(64 * 1024 + 1));
    await storage.write('job/chk-1/_metadata', small);
    await storage.write('job/chk-1/state', large);
    const files = createStore(dbName, 'files');
    expect(await get('job/chk-1/_metadata', files)).toBeInstanceOf(Uint8Array);
    expect(await get('job/chk-1/state', files)).toBeInstanceOf(Blob);
    expect(await storage.read('job/chk-1/_metadata')).toEqual(small);
    expect(await storage.read('job/chk-1/state')).toEqual(large);
  });

  it('reads files stored as Uint8Array values (before files were stored as blobs)', async () => {
    const dbName = freshDbName();
    await set('job/chk-1/_metadata', bytes('older'), createStore(dbName, 'files'));
    expect(text(await indexedDbCheckpointStorage({ dbName }).read('job/chk-1/_metadata'))).toBe('older');
  });

  it('rejects a value it did not write with CheckpointCorruptedError', async () => {
    const dbName = freshDbName();
    await set('job/chk-1/_metadata', { not: 'bytes' }, createStore(dbName, 'files'));
    await expect(indexedDbCheckpointStorage({ dbName }).read('job/chk-1/_metadata')).rejects.toThrow(CheckpointCorruptedError);
  });

  it('turns a full quota into StorageQuotaExceededError and keeps what was there, the overwritten file included', async () => {
    const storage = await storageWithQuota(1024 * 1024);
    await storage.write('job/chk-1/_metadata', bytes('complete'));
    await storage.write('job/chk-2/_metadata', bytes('old'));

    const large = new Uint8Array(4 * 1024 * 1024).fill(7);
    const failed = storage.write('job/chk-2/_metadata', large);
    await expect(failed).rejects.toThrow(StorageQuotaExceededError);
    await expect(failed).rejects.toThrow(/indexeddb:\/\/.*job\/chk-2\/_metadata.*quota/);
    await expect(storage.write('job/chk-3/op', large)).rejects.toThrow(StorageQuotaExceededError);

    expect(text(await storage.read('job/chk-1/_metadata'))).toBe('complete');
    expect(text(await storage.read('job/chk-2/_metadata'))).toBe('old');
    expect(await storage.list('job')).toEqual(['chk-1', 'chk-2']);
    await expect(storage.read('job/chk-3/op')).rejects.toThrow(CheckpointNotFoundError);
  });

  it('lists the checkpoints of a job among ten thousand files', async () => {
    const storage = indexedDbCheckpointStorage({ dbName: freshDbName() });
    const store = createStore(storage.location.slice('indexeddb://'.length), 'files');
    // Written straight through idb-keyval in one transaction: the set-up is not what is measured.
    await store('readwrite', (files) => {
      for (let chk = 1; chk <= 20; chk += 1) {
        for (let op = 0; op < 500; op += 1) files.put(bytes('s'), `job/chk-${chk}/op-${op}`);
      }
      return new Promise((resolve) => (files.transaction.oncomplete = resolve));
    });
    expect(await storage.list('job')).toEqual(Array.from({ length: 20 }, (_, i) => `chk-${i + 1}`).sort());
    expect(await storage.list('job/chk-7')).toHaveLength(500);
  });
});
