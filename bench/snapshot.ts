import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { heapStateBackend, valueState, type KeyedStatePayload } from 'weir';
import { fsCheckpointStorage } from 'weir/node';
import { decodeFile, encodeFile } from '../src/storage/fileFormat';
import { populatedBackend } from './checkpointing';
import { sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const KEYS = 1_000_000;

/**
 * A full snapshot of 1M keys through weir (materialize → encodeFile → fs storage write; read → decodeFile →
 * restore → first state access) vs the plain way of saving a Map: `JSON.stringify` of its entries and
 * `fs.writeFile`; `fs.readFile`, `JSON.parse` and `new Map(entries)`.
 */
export async function snapshot(): Promise<Result[]> {
  const backend = populatedBackend(KEYS);
  const plain = new Map<string, KeyedEvent>();
  for (let i = 0; i < KEYS; i++) plain.set(`k${i}`, { key: `k${i}`, n: i & 1023 });
  const dir = await mkdtemp(join(tmpdir(), 'weir-bench-'));
  const storage = fsCheckpointStorage(dir);
  const jsonFile = join(dir, 'plain.json');
  const weirFile = 'chk-1/sum';

  const write = await sideBySide(
    {
      weir: async () => {
        const start = performance.now();
        await storage.write(weirFile, encodeFile('state', backend.snapshot().materialize()));
        return performance.now() - start;
      },
      json: async () => {
        const start = performance.now();
        await writeFile(jsonFile, JSON.stringify(Array.from(plain)));
        return performance.now() - start;
      },
    },
    { rounds: 3, best: 'min' },
  );

  const descriptor = valueState<KeyedEvent>('reduce');
  const restore = await sideBySide(
    {
      weir: async () => {
        const start = performance.now();
        const payload = decodeFile('state', await storage.read(weirFile), weirFile) as KeyedStatePayload;
        const restored = heapStateBackend().createKeyedBackend({ uid: 'sum', maxParallelism: 128, keyGroupRange: { start: 0, end: 127 } });
        restored.restore([payload]);
        const state = restored.getState(descriptor);
        restored.setCurrentKey('k1');
        if (state.value()?.n !== 1) throw new Error('restore benchmark: k1 does not hold n = 1');
        return performance.now() - start;
      },
      json: async () => {
        const start = performance.now();
        const restored = new Map<string, KeyedEvent>(JSON.parse(await readFile(jsonFile, 'utf8')));
        if (restored.get('k1')?.n !== 1) throw new Error('restore benchmark: k1 does not hold n = 1');
        return performance.now() - start;
      },
    },
    { rounds: 3, best: 'min' },
  );
  await rm(dir, { recursive: true, force: true });
  return [
    { name: 'snapshot/write-1M/weir', value: write.weir, unit: 'ms' },
    { name: 'snapshot/write-1M/json', value: write.json, unit: 'ms' },
    { name: 'snapshot/restore-1M/weir', value: restore.weir, unit: 'ms' },
    { name: 'snapshot/restore-1M/json', value: restore.json, unit: 'ms' },
    { name: 'snapshot/write-vs-json', value: write.weir / write.json, unit: 'ratio', bar: { op: '<=', value: 1.5 } },
    { name: 'snapshot/restore-vs-json', value: restore.weir / restore.json, unit: 'ratio', bar: { op: '<=', value: 1.5 } },
  ];
}
