// Progress on long work: a cli-progress bar for `weir inspect` and the State Processor, drawn on a terminal only.
import { PassThrough } from 'node:stream';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSavepoint, deriveSavepoint, readSavepoint, valueState, type ProgressListener } from 'weir';
import { fsCheckpointStorage, progressBar } from 'weir/node';
import { main } from '../../src/node/cli/main';

/** A stream that is not a TTY, keeping what is written to it. */
function captured(): PassThrough & { text(): string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return Object.assign(stream, { text: () => text });
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-progress-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const count = valueState<number>('count');
/** Named as weir names savepoints, so that `weir inspect` finds it. */
const SAVEPOINT = 'savepoint-clicks-1-1a2b3c4d';

/** A savepoint of 4 keyed instances (4 state files and the metadata), written with `onProgress`. */
async function writeSavepoint(onProgress?: ProgressListener) {
  const storage = fsCheckpointStorage(dir);
  const entries = Array.from({ length: 100 }, (_, i) => [`k${i}`, i] as const);
  const path = await createSavepoint({ job: 'clicks' }).withKeyedState('per-user', count, entries, { parallelism: 4 }).write(storage, SAVEPOINT, { onProgress });
  return { storage, path };
}

describe('progressBar', () => {
  it('draws nothing when the stream is not a terminal', async () => {
    const stream = captured();
    await writeSavepoint(progressBar('writing', { stream }));
    expect(stream.text()).toBe('');
  });

  it('draws the bar when forced, up to the last file', async () => {
    const stream = captured();
    await writeSavepoint(progressBar('writing', { stream, force: true }));
    expect(stream.text()).toMatch(/writing \[[^\]]*\] 5\/5 _metadata/);
  });

  it('reports each file a savepoint write ends, and each operator deriveSavepoint reads', async () => {
    const written: string[] = [];
    const { storage } = await writeSavepoint(({ done, total, file }) => written.push(`${done}/${total} ${file}`));
    expect(written).toEqual(['1/5 per-user.0.kg-0-31', '2/5 per-user.1.kg-32-63', '3/5 per-user.2.kg-64-95', '4/5 per-user.3.kg-96-127', '5/5 _metadata']);
    const read: string[] = [];
    await deriveSavepoint(await readSavepoint(storage, SAVEPOINT), { onProgress: ({ done, total, file }) => read.push(`${done}/${total} ${file}`) });
    expect(read).toEqual(['1/1 per-user']);
  });
});

describe('weir inspect progress', () => {
  it('stays off when stderr is not a terminal, and draws with --progress', async () => {
    await writeSavepoint();
    const quiet = { out: captured(), err: captured() };
    expect(await main(['inspect', dir], quiet)).toBe(0);
    expect(quiet.err.text()).toBe('');
    expect(quiet.out.text()).toMatch(/job clicks: 0 checkpoints, 1 savepoint/);

    const forced = { out: captured(), err: captured() };
    expect(await main(['inspect', dir, '--progress'], forced)).toBe(0);
    expect(forced.err.text()).toMatch(/reading \[[^\]]*\] \d+\/\d+/);
    // The report itself is the same, and never mixed with the bar.
    expect(forced.out.text()).toBe(quiet.out.text());
  });
});
