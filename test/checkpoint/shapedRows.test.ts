import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointCorruptedError, collect, createJob, fromArray, keyBy, process, valueState } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { checkStatePayload } from '../../src/checkpoint/checkPayloads';
import { readCheckpointEntries } from '../../src/inspector/readStateEntries';
import { FlatStateFileBuilder, decodeFile } from '../../src/storage/fileFormat';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-shaped-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Put {
  readonly key: string;
  /** Undefined: emit the key's stored value instead of storing one. */
  readonly value?: unknown;
}

/** Stores each record's value under its key, or emits the stored one. */
function storeJob(records: readonly Put[]) {
  const stored = valueState<unknown>('stored');
  const job = createJob({ name: 'shaped', checkpoints: { storage: fsCheckpointStorage(join(dir, 'chk')) } });
  const out = collect<[string, unknown]>();
  job
    .source(fromArray(records), { uid: 'in' })
    .pipe(
      keyBy((r: Put) => r.key),
      process<Put, [string, unknown]>(
        {
          onElement(r, ctx, emit) {
            if (r.value === undefined) emit.emit([r.key, ctx.state(stored).value()]);
            else ctx.state(stored).update(r.value);
          },
        },
        { uid: 'store' },
      ),
    )
    .pipe(out.sink({ uid: 'out' }));
  return { job, out };
}

describe('values written as rows of their fields (state file format 5)', () => {
  // The first values give the shape { k, v }; the others, of other shapes or not plain JSON, go as they are.
  const values: [string, unknown][] = [
    ['a', { k: 'a', v: 1 }],
    ['b', { k: 'b', v: 'text ✓ \u{1F600}' }],
    ['c', { k: 'c', v: null }],
    ['d', { k: 'd', v: true }],
    ['e', { k: 'e', v: -0 }],
    ['f', { k: 'f', v: { nested: [1, 2] } }],
    ['g', { k: 'g', v: new Date(5) }],
    ['h', { v: 2, k: 'h' }],
    ['i', { k: 'i', v: 3, extra: 'x' }],
    ['j', { k: 'j' }],
    ['l', { k: 'l', v: 1.5e300 }],
    ['m', { $superjson: 1, v: 2 }],
    ['n', 42],
    ['o', [{ k: 'o', v: 1 }]],
  ];

  it('restore as the values stored, and the inspector shows them as such', async () => {
    const puts = values.map(([key, value]) => ({ key, value }));
    const first = storeJob(puts);
    await first.job.start().done;
    const chk = join(dir, 'chk', 'shaped', 'chk-1');
    const files = (await readdir(chk)).filter((name) => name.startsWith('store.'));
    const header = (await Promise.all(files.map((name) => readFile(join(chk, name), 'utf8')))).map((text) => text.slice(0, text.indexOf('\n')));
    expect(header.join()).toMatch(/"version":5/);
    // The inspector reads the rows as the values they stand for.
    const entries = (await readCheckpointEntries(fsCheckpointStorage(join(dir, 'chk')), 'shaped/chk-1')).get('store')!.get('stored')!;
    expect(new Map(entries.map((entry) => [entry.key, entry.value]))).toEqual(new Map(values));

    // The same source, read on from where the checkpoint left it: the reads.
    const second = storeJob([...puts, ...values.map(([key]) => ({ key }))]);
    const result = await second.job.start({ restore: 'latest' }).done;
    expect(result.restoredFrom).toBe('shaped/chk-1');
    expect(second.out.values).toEqual(values);
    // -0 stays -0 (`toEqual` tells it from 0), and the odd field order of 'h' is kept.
    expect(Object.is((second.out.values.find(([key]) => key === 'e')![1] as { v: number }).v, -0)).toBe(true);
    expect(Object.keys(second.out.values.find(([key]) => key === 'h')![1] as object)).toEqual(['v', 'k']);
  });
});

describe('a state file with rows (FlatStateFileBuilder)', () => {
  const states = [
    { name: 'a', kind: 'value', serializer: 'auto', serializerVersion: 1 },
    { name: 'b', kind: 'value', serializer: 'auto', serializerVersion: 1 },
  ];
  const read = (bytes: Uint8Array) => checkStatePayload(decodeFile('state', bytes, 'built'), 'op', 'built').keyed!;

  it('reads back as flat entries, whichever list comes first, several shapes and namespaces included', () => {
    for (const rowsFirst of [true, false]) {
      const builder = new FlatStateFileBuilder('op', states, [0, 127]);
      const rows = { shaped: [{ state: 0, fields: ['x', 'y'], rows: ['k1', 1, 'one', 'k2', 2, 'two'] }] };
      const flat = { flat: [1, 'k3', [3]] };
      for (const piece of rowsFirst ? [rows, flat] : [flat, rows]) builder.add(piece);
      builder.add({ shaped: [{ state: 1, fields: ['z'], rows: ['k4', null] }, { state: 0, fields: ['x', 'y'], rows: ['k5', 5, 'five'] }] });
      builder.add({ flatNamespaced: [1, 'k6', 6, 'w-1'] });
      expect(builder.entries).toBe(6);
      const keyed = read(builder.finish({ offset: 1 }));
      expect(keyed.shaped).toBeUndefined();
      expect(keyed.flatNamespaced).toEqual([1, 'k6', 6, 'w-1']);
      const entries = new Map<unknown, unknown[]>();
      for (let i = 0; i < keyed.flat!.length; i += 3) entries.set(keyed.flat![i + 1], [keyed.flat![i], keyed.flat![i + 2]]);
      expect(entries).toEqual(
        new Map<unknown, unknown[]>([
          ['k1', [0, { x: 1, y: 'one' }]],
          ['k2', [0, { x: 2, y: 'two' }]],
          ['k3', [1, [3]]],
          ['k4', [1, { z: null }]],
          ['k5', [0, { x: 5, y: 'five' }]],
        ]),
      );
    }
  });

  it('with rows that do not fill their fields, or name an undeclared state, is rejected as corrupted', () => {
    const short = new FlatStateFileBuilder('op', states, [0, 127]);
    short.add({ shaped: [{ state: 0, fields: ['x', 'y'], rows: ['k1', 1] }] });
    expect(() => read(short.finish(undefined))).toThrow(CheckpointCorruptedError);
    const undeclared = new FlatStateFileBuilder('op', states, [0, 127]);
    undeclared.add({ shaped: [{ state: 2, fields: ['x'], rows: ['k1', 1] }] });
    expect(() => read(undeclared.finish(undefined))).toThrow(/shaped entries #0 .* undeclared state/);
  });
});
