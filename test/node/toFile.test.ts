import { appendFile, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileChangedError, type Json, type SinkWriter } from 'weir';
import { fileSink } from 'weir/node';

describe('fileSink (toFile)', () => {
  let dir: string;
  let path: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weir-to-file-'));
    path = join(dir, 'out.jsonl');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const open = async <T = unknown>(restoredState?: Json, format?: (value: T) => string): Promise<SinkWriter<T>> =>
    fileSink<T>(path, { format }).open({ uid: 'out', restoredState, checkpointing: true });
  const contents = () => readFile(path, 'utf8');
  // Checkpoint state travels through a checkpoint file as JSON.
  const snapshot = async (writer: SinkWriter<unknown>, id: number): Promise<Json> =>
    JSON.parse(JSON.stringify(await writer.snapshot!(id))) as Json;

  it('is named after its path', () => {
    expect(fileSink('out.jsonl').name).toBe('toFile(out.jsonl)');
  });

  it('makes lines visible only when their checkpoint commits', async () => {
    const writer = await open();
    writer.write({ n: 1 });
    writer.write('two');
    expect(await contents()).toBe('');
    await snapshot(writer, 1);
    expect(await contents()).toBe('');
    writer.write({ n: 3 });
    await writer.commit!(1);
    expect(await contents()).toBe('{"n":1}\n"two"\n');
    await snapshot(writer, 2);
    await writer.commit!(2);
    expect(await contents()).toBe('{"n":1}\n"two"\n{"n":3}\n');
    expect(await readdir(dir)).toEqual(['out.jsonl']);
  });

  it('commits every earlier pre-committed checkpoint with a later one, in order', async () => {
    const writer = await open<string>(undefined, (s) => s.toUpperCase());
    writer.write('a');
    await snapshot(writer, 1);
    writer.write('b');
    await snapshot(writer, 2);
    await writer.commit!(2);
    expect(await contents()).toBe('A\nB\n');
  });

  it('starts a fresh run with an empty file', async () => {
    await writeFile(path, 'old output\n');
    await open();
    expect(await contents()).toBe('');
  });

  it('on restore, commits a pre-committed part the crashed attempt did not commit', async () => {
    const crashed = await open();
    crashed.write(1);
    crashed.write(2);
    const state = await snapshot(crashed, 1);
    crashed.write(3); // never checkpointed: lost with the attempt, replayed by the source
    await open(state);
    expect(await contents()).toBe('1\n2\n');
    expect(await readdir(dir)).toEqual(['out.jsonl']);
  });

  it('on restore, recommits a part whose commit crashed after appending, without duplicating it', async () => {
    const crashed = await open();
    crashed.write('a');
    await snapshot(crashed, 1);
    await crashed.commit!(1);
    crashed.write('b');
    const state = await snapshot(crashed, 2);
    // The crash hit between the append and the unlink of part 2.
    await appendFile(path, '"b"\n');
    await open(state);
    expect(await contents()).toBe('"a"\n"b"\n');
  });

  it('on restore, drops output committed by checkpoints newer than the restored one', async () => {
    const first = await open();
    first.write('kept');
    const state1 = await snapshot(first, 1);
    await first.commit!(1);
    first.write('dropped');
    await snapshot(first, 2);
    await first.commit!(2);
    expect(await contents()).toBe('"kept"\n"dropped"\n');

    await open(state1);
    expect(await contents()).toBe('"kept"\n');
  });

  it('on restore, deletes parts of checkpoints that never completed', async () => {
    const crashed = await open();
    crashed.write('committed');
    const state1 = await snapshot(crashed, 1);
    await crashed.commit!(1);
    crashed.write('orphan');
    await snapshot(crashed, 2);
    await writeFile(join(dir, '.out.jsonl.part-3.abc.tmp'), 'torn');
    await writeFile(join(dir, 'other.txt'), 'not ours');
    expect((await readdir(dir)).sort()).toEqual(['.out.jsonl.part-3.abc.tmp', 'other.txt', 'out.jsonl', 'out.jsonl.part-2']);

    await open(state1);
    expect((await readdir(dir)).sort()).toEqual(['other.txt', 'out.jsonl']);
    expect(await contents()).toBe('"committed"\n');
  });

  it('continues after a restore with new checkpoints', async () => {
    const crashed = await open();
    crashed.write(1);
    const state = await snapshot(crashed, 1);
    const writer = await open(state);
    writer.write(2);
    await snapshot(writer, 2);
    await writer.commit!(2);
    expect(await contents()).toBe('1\n2\n');
  });

  it('finish makes buffered and pre-committed lines visible', async () => {
    const writer = await open();
    writer.write('pre-committed');
    await snapshot(writer, 1);
    writer.write('buffered');
    await writer.finish();
    expect(await contents()).toBe('"pre-committed"\n"buffered"\n');
    expect(await readdir(dir)).toEqual(['out.jsonl']);
  });

  it('finish without checkpointing writes everything', async () => {
    const writer = await fileSink<number>(path).open({ uid: 'out', restoredState: undefined, checkpointing: false });
    for (let i = 0; i < 3; i += 1) writer.write(i);
    await writer.finish();
    expect(await contents()).toBe('0\n1\n2\n');
  });

  it('abort drops the buffer but keeps pre-committed parts for a restore', async () => {
    const writer = await open();
    writer.write('pre-committed');
    const state = await snapshot(writer, 1);
    writer.write('lost');
    await writer.abort();
    expect(await readdir(dir)).toContain('out.jsonl.part-1');
    await open(state);
    expect(await contents()).toBe('"pre-committed"\n');
  });

  it('refuses to restore into an output that lost committed bytes', async () => {
    const writer = await open();
    writer.write('x');
    const state = await snapshot(writer, 1);
    await writer.commit!(1);
    await writeFile(path, '');
    await expect(open(state)).rejects.toThrow(FileChangedError);
  });
});
