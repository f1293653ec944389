import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { payloadEntries } from '../support/payloadEntries';
import { fromArray, keyGroupOf, keyGroupRangeFor, type KeyedStatePayload } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { byKeyThenN, events, outputs, pausableSource, readWeirFile, rescaleJob, tempDir } from '../support/savepointFixtures';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir('weir-rescale-')));
afterEach(() => cleanup());

/** The keyed state files of `uid` in a savepoint: their key-group range (from the name) and the groups they hold. */
async function stateFiles(path: string, uid: string) {
  const files = (await readdir(path)).filter((name) => new RegExp(`^${uid}\\.\\d+\\.kg-`).test(name)).sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]));
  return Promise.all(
    files.map(async (file) => {
      const [, subtask, range] = file.split('.');
      const [start, end] = range!.slice('kg-'.length).split('-').map(Number);
      const payload = await readWeirFile<{ keyed: KeyedStatePayload }>(join(path, file));
      const entries = payloadEntries(payload.keyed);
      const keys = new Set(entries.map(({ entry: [, key] }) => key as string));
      return { subtask: Number(subtask), start: start!, end: end!, groups: [...new Set(entries.map(({ keyGroup }) => keyGroup))].sort((a, b) => a - b), keys };
    }),
  );
}

/** Checks that a savepoint holds one file per instance of `parallelism`, each with exactly its range's keys. */
async function expectRanges(path: string, uid: string, parallelism: number, allKeys: Set<string>) {
  const files = await stateFiles(path, uid);
  expect(files.map(({ subtask, start, end }) => ({ subtask, start, end }))).toEqual(
    Array.from({ length: parallelism }, (_, i) => ({ subtask: i, ...keyGroupRangeFor(i, parallelism, 128) })),
  );
  for (const { start, end, groups, keys } of files) {
    for (const group of groups) expect(group >= start && group <= end).toBe(true);
    const expected = Array.from(allKeys).filter((key) => {
      const group = keyGroupOf(key, 128);
      return group >= start && group <= end;
    });
    expect(keys).toEqual(new Set(expected));
  }
}

describe.each([
  [4, 2],
  [2, 4],
  [1, 7],
  [7, 3],
])('rescaling from parallelism %i to %i', (from, to) => {
  it('gives each instance exactly its range of key groups, and the results of a run that never rescaled', async () => {
    const unscaled = outputs();
    await rescaleJob({}, fromArray(events), unscaled, 1).start().done;

    const storage = fsCheckpointStorage(join(dir, 'checkpoints'));
    const out = outputs();
    const paused = pausableSource(events, [150, 300]);
    const first = rescaleJob({ checkpoints: { storage } }, paused.source, out, from).start();
    await paused.reached(150);
    const before = (await first.stop({ savepoint: { path: join(dir, 'savepoints') } })).checkpoints.at(-1)!.path;
    paused.release(150);
    const keysBefore = new Set(events.slice(0, 150).map((e) => e.key));
    await expectRanges(before, 'sum', from, keysBefore);

    const second = rescaleJob({ checkpoints: { storage } }, paused.source, out, to).start({ restore: { savepoint: before } });
    await paused.reached(300);
    const after = (await second.stop({ savepoint: { path: join(dir, 'savepoints') } })).checkpoints.at(-1)!.path;
    paused.release(300);
    // Each new instance got its range's state (and only that): what it saved again is exactly its range's keys.
    await expectRanges(after, 'sum', to, new Set(events.slice(0, 300).map((e) => e.key)));
    expect((await stateFiles(after, 'win')).map(({ start, end }) => [start, end])).toEqual(
      Array.from({ length: to }, (_, i) => Object.values(keyGroupRangeFor(i, to, 128))),
    );

    await rescaleJob({ checkpoints: { storage } }, fromArray(events), out, from).start({ restore: { savepoint: after } }).done;
    // Rolling sums come out in record order whatever the parallelism; window firings per instance, so sorted.
    expect(out.sums.values).toEqual(unscaled.sums.values);
    expect([...out.windows.values].sort(byKeyThenN)).toEqual([...unscaled.windows.values].sort(byKeyThenN));
  });
});
