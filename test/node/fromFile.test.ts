import { readdirSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileChangedError, MalformedRecordError, SourceNotFoundError, createJob, type Json, type Source } from 'weir';
import { fromFile, fsCheckpointStorage, toFile } from 'weir/node';

/** The file descriptors this process holds open on files under `dir` (Linux), by the links in /proc/self/fd. */
function openDescriptors(dir: string): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)) count++;
    } catch {
      // The descriptor readdir itself used is gone by now.
    }
  }
  return count;
}

/** Reads a source to its end, `max` records at a time. */
async function readAll<T>(source: Source<T>, restoredOffset?: Json, max = 1000): Promise<{ records: T[]; offset: Json }> {
  const reader = await source.open({ uid: 'src', restoredOffset });
  const records: T[] = [];
  for (let batch = await reader.read(max); batch !== null; batch = await reader.read(max)) records.push(...batch);
  await reader.close?.();
  return { records, offset: reader.offset() };
}

describe('fromFile', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weir-from-file-'));
    file = join(dir, 'input.jsonl');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads every line and skips empty ones', async () => {
    await writeFile(file, 'a\nb\n\nc\n');
    const source = fromFile(file);
    expect(source.name).toBe(`fromFile(${file})`);
    expect(source.replayable).toBe(true);
    expect(await readAll(source)).toEqual({ records: ['a', 'b', 'c'], offset: 7 });
  });

  it('parses lines, across block boundaries and multi-byte characters', async () => {
    const values = Array.from({ length: 500 }, (_, i) => ({ i, word: `é€${'x'.repeat(i % 17)}` }));
    await writeFile(file, values.map((v) => JSON.stringify(v)).join('\n'));
    const { records } = await readAll(fromFile(file, { parse: JSON.parse, chunkSize: 7 }), undefined, 13);
    expect(records).toEqual(values);
  });

  it('returns at most max records per read, and null at the end', async () => {
    await writeFile(file, '1\n2\n3\n4\n5\n');
    const reader = await fromFile(file, { parse: Number }).open({ uid: 'src', restoredOffset: undefined });
    expect(await reader.read(2)).toEqual([1, 2]);
    expect(reader.offset()).toBe(4);
    expect(await reader.read(2)).toEqual([3, 4]);
    expect(await reader.read(2)).toEqual([5]);
    expect(await reader.read(2)).toBeNull();
    expect(reader.offset()).toBe(10);
  });

  it('resumes at a saved offset with exactly the remaining lines', async () => {
    const lines = Array.from({ length: 100 }, (_, i) => `line-${i}`);
    await writeFile(file, `${lines.join('\n')}\n`);
    for (const take of [0, 1, 37, 99, 100]) {
      const reader = await fromFile(file, { chunkSize: 16 }).open({ uid: 'src', restoredOffset: undefined });
      const first = take === 0 ? [] : ((await reader.read(take)) ?? []);
      const offset = reader.offset();
      await reader.close?.();
      const rest = await readAll(fromFile(file, { chunkSize: 16 }), offset);
      expect([...first, ...rest.records]).toEqual(lines);
    }
  });

  it('handles CRLF line endings and a last line without a newline', async () => {
    await writeFile(file, 'a\r\nb\r\n\r\nc');
    expect((await readAll(fromFile(file))).records).toEqual(['a', 'b', 'c']);
    const { offset } = await readAll(fromFile(file));
    expect(offset).toBe(9);
  });

  it('names the file and the byte offset of a malformed line', async () => {
    await writeFile(file, '{"a":1}\n{oops\n');
    const reader = await fromFile(file, { parse: JSON.parse }).open({ uid: 'src', restoredOffset: undefined });
    const error = await Promise.resolve(reader.read(10)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedRecordError);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain('byte 8');
    expect((error as Error).cause).toBeInstanceOf(SyntaxError);
    await reader.close?.();
  });

  it('rejects bytes that are not UTF-8 as a malformed record', async () => {
    await writeFile(file, Buffer.from([0x61, 0x0a, 0xff, 0xfe, 0x0a]));
    await expect(readAll(fromFile(file))).rejects.toThrow(MalformedRecordError);
  });

  it('names the absolute path of a missing file', async () => {
    const source = fromFile(join(dir, 'missing.jsonl'));
    await expect(Promise.resolve(source.open({ uid: 'src', restoredOffset: undefined }))).rejects.toThrow(SourceNotFoundError);
    await expect(Promise.resolve(source.open({ uid: 'src', restoredOffset: undefined }))).rejects.toThrow(join(dir, 'missing.jsonl'));
  });

  it('refuses to resume past the end of a file that shrank since the checkpoint', async () => {
    await writeFile(file, 'a\n');
    await expect(readAll(fromFile(file), 100)).rejects.toThrow(FileChangedError);
  });

  it('holds no file descriptor until its first read, and none once closed', async () => {
    await writeFile(file, 'a\nb\n');
    const readers = await Promise.all(Array.from({ length: 30 }, () => fromFile(file).open({ uid: 'src', restoredOffset: 2 })));
    expect(openDescriptors(dir)).toBe(0);
    expect(await readers[0]!.read(1)).toEqual(['b']);
    expect(openDescriptors(dir)).toBe(1);
    await Promise.all(readers.map((reader) => reader.close?.()));
    expect(openDescriptors(dir)).toBe(0);
  });

  it('leaves no descriptor open after starts that fail, wherever they fail', async () => {
    await writeFile(file, Array.from({ length: 50 }, (_, n) => `${n}`).join('\n'));
    const output = join(dir, 'out.jsonl');
    const build = () => {
      const job = createJob({ name: 'leak', checkpoints: { storage: fsCheckpointStorage(join(dir, 'checkpoints')) } });
      job.source(fromFile(file, { parse: Number }), { uid: 'in' }).pipe(toFile(output, { uid: 'out' }));
      return job;
    };
    await build().start().done;
    // The sink refuses its restored state (its committed output was cut), after the source has opened.
    await truncate(output, 3);
    await expect(build().start({ restore: 'latest' }).done).rejects.toThrow(FileChangedError);
    for (let run = 0; run < 30; run++) await expect(build().start({ restore: 'latest' }).done).rejects.toThrow(FileChangedError);
    // The source itself refuses: the checkpoint's offset is past the end of the truncated input.
    await truncate(file, 3);
    for (let run = 0; run < 30; run++) await expect(build().start({ restore: 'latest' }).done).rejects.toThrow(/resumes at byte/);
    expect(openDescriptors(dir)).toBe(0);
  });
});
