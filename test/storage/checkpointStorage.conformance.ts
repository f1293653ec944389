import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointNotFoundError, type CheckpointStorage } from 'weir';

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

/**
 * The behaviour every `CheckpointStorage` must have; each storage's test file runs it with a factory that makes an
 * empty storage (and optionally cleans it up afterwards).
 * @example describeCheckpointStorage('memory', async () => ({ storage: memoryCheckpointStorage() }))
 */
export function describeCheckpointStorage(
  name: string,
  create: () => Promise<{ storage: CheckpointStorage; cleanup?: () => Promise<void> }>,
): void {
  describe(`${name} checkpoint storage (conformance)`, () => {
    let storage: CheckpointStorage;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ storage, cleanup } = await create());
    });
    afterEach(async () => {
      await cleanup?.();
    });

    it('reads back what it wrote', async () => {
      await storage.write('job/chk-1/_metadata', bytes('hello'));
      expect(text(await storage.read('job/chk-1/_metadata'))).toBe('hello');
    });

    it('replaces a file on overwrite', async () => {
      await storage.write('a', bytes('first, and longer'));
      await storage.write('a', bytes('second'));
      expect(text(await storage.read('a'))).toBe('second');
    });

    it('rejects a read of a missing file with CheckpointNotFoundError naming it', async () => {
      await expect(storage.read('job/chk-9/_metadata')).rejects.toThrow(CheckpointNotFoundError);
      await expect(storage.read('job/chk-9/_metadata')).rejects.toThrow(/chk-9\/_metadata/);
    });

    it('lists the direct children of a directory: files and subdirectories', async () => {
      await storage.write('job/chk-1/_metadata', bytes('m'));
      await storage.write('job/chk-1/op.0', bytes('s'));
      await storage.write('job/chk-2/deep/nested/file', bytes('n'));
      await storage.write('job/top', bytes('t'));
      await storage.write('other/x', bytes('x'));

      expect((await storage.list('job')).sort()).toEqual(['chk-1', 'chk-2', 'top']);
      expect((await storage.list('job/chk-1')).sort()).toEqual(['_metadata', 'op.0']);
      expect(await storage.list('job/chk-2')).toEqual(['deep']);
      expect(await storage.list('job/chk-2/deep/nested')).toEqual(['file']);
      expect((await storage.list('')).sort()).toEqual(['job', 'other']);
    });

    it('lists names that sort right before and after a directory (characters below and above /)', async () => {
      await storage.write('job/c.txt', bytes('before'));
      await storage.write('job/c!x', bytes('before'));
      await storage.write('job/c/inner', bytes('dir'));
      await storage.write('job/c/deeper/file', bytes('dir'));
      await storage.write('job/c0', bytes('after'));
      await storage.write('job/d/inner', bytes('dir'));
      expect((await storage.list('job')).sort()).toEqual(['c', 'c!x', 'c.txt', 'c0', 'd'].sort());
      expect((await storage.list('job/c')).sort()).toEqual(['deeper', 'inner']);
    });

    it('lists a missing directory as empty', async () => {
      expect(await storage.list('nothing/here')).toEqual([]);
    });

    it('removes a file and leaves its siblings', async () => {
      await storage.write('job/chk-1/a', bytes('a'));
      await storage.write('job/chk-1/b', bytes('b'));
      await storage.remove('job/chk-1/a');
      await expect(storage.read('job/chk-1/a')).rejects.toThrow(CheckpointNotFoundError);
      expect(await storage.list('job/chk-1')).toEqual(['b']);
    });

    it('removes a directory with everything under it, and nothing beside it', async () => {
      await storage.write('job/chk-1/_metadata', bytes('m'));
      await storage.write('job/chk-1/sub/file', bytes('f'));
      await storage.write('job/chk-10/_metadata', bytes('keep'));
      await storage.remove('job/chk-1');
      expect(await storage.list('job')).toEqual(['chk-10']);
      expect(await storage.list('job/chk-1')).toEqual([]);
      expect(text(await storage.read('job/chk-10/_metadata'))).toBe('keep');
    });

    it('removes a missing path without error', async () => {
      await expect(storage.remove('never/written')).resolves.toBeUndefined();
    });

    it('keeps its own copy of the bytes', async () => {
      const data = bytes('original');
      await storage.write('copy', data);
      data.fill(0);
      const read = await storage.read('copy');
      expect(text(read)).toBe('original');
      read.fill(0);
      expect(text(await storage.read('copy'))).toBe('original');
    });

    it('round-trips a large file', async () => {
      const large = new Uint8Array(8 * 1024 * 1024);
      for (let i = 0; i < large.length; i += 1) large[i] = (i * 31) & 0xff;
      await storage.write('job/chk-1/large', large);
      const read = await storage.read('job/chk-1/large');
      expect(read.length).toBe(large.length);
      // A loop rather than Buffer.compare: the suite also runs in the browser, which has no Buffer.
      expect(read.findIndex((byte, i) => byte !== large[i])).toBe(-1);
    });
  });
}
