import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createJob, forEach, fromArray, heapStateBackend, keyBy, reduce, type StateBackend } from 'weir';
import { lmdbStateBackend } from 'weir/node';
import { addEvents, makeEvents, noop, perSecond, sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const KEYS = 1_000_000;
const EVENTS = 2_000_000;
const HEAP_LIMIT_KEYS = 5_000_000;


/** Keyed reduce over `events` on `stateBackend`, checkpoints off, a no-op sink: events per second. */
async function keyedReduce(events: KeyedEvent[], stateBackend: StateBackend): Promise<number> {
  const start = performance.now();
  const job = createJob({ name: 'bench-large-state', stateBackend });
  job.source(fromArray(events), { uid: 'events' }).pipe(keyBy((e) => e.key), reduce(addEvents, { uid: 'sum' }), forEach(noop));
  await job.start().done;
  return perSecond(events.length, performance.now() - start);
}

/** `count` events over `keyCount` keys drawn from a Zipf distribution (s = 1): a few hot keys, a long tail. */
function makeZipfEvents(count: number, keyCount: number): KeyedEvent[] {
  const cumulative = new Float64Array(keyCount);
  let sum = 0;
  for (let i = 0; i < keyCount; i++) cumulative[i] = sum += 1 / (i + 1);
  const keys = Array.from({ length: keyCount }, (_, i) => `k${i}`);
  const events: KeyedEvent[] = new Array(count);
  let seed = 0x2545f491;
  for (let i = 0; i < count; i++) {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    const target = ((seed >>> 0) / 2 ** 32) * sum;
    let low = 0;
    let high = keyCount - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (cumulative[middle]! < target) low = middle + 1;
      else high = middle;
    }
    events[i] = { key: keys[low]!, n: i & 15 };
  }
  return events;
}

async function throughput(name: string, events: KeyedEvent[], dir: string, bar?: Result['bar']): Promise<Result[]> {
  const best = await sideBySide(
    { lmdb: () => keyedReduce(events, lmdbStateBackend({ path: dir })), heap: () => keyedReduce(events, heapStateBackend()) },
    { rounds: 2, best: 'max', warmup: false },
  );
  return [
    { name: `large-state/${name}-lmdb`, value: best.lmdb, unit: 'events/s' },
    { name: `large-state/${name}-heap`, value: best.heap, unit: 'events/s' },
    { name: `large-state/${name}`, value: best.lmdb / best.heap, unit: 'ratio', ...(bar ? { bar } : {}) },
  ] as Result[];
}

/** 1 when the 5M-key job, then its restore, finished in a child process with a 256 MB heap; 0 when it died. */
function heapLimit(backend: 'lmdb' | 'heap', dir: string): Result[] {
  const child = fileURLToPath(new URL('./largeStateJob.ts', import.meta.url));
  const started = performance.now();
  const run = spawnSync(
    process.execPath,
    ['--max-old-space-size=256', '--import', 'tsx', child, backend, join(dir, `chk-${backend}`), String(HEAP_LIMIT_KEYS)],
    { encoding: 'utf8', timeout: 240_000 },
  );
  const ok = run.status === 0 && run.stdout.includes('ok');
  const outOfMemory = /heap out of memory|Allocation failed/i.test(run.stderr);
  console.error(
    `[bench] heap-limit ${backend}: ${ok ? 'completed and restored' : outOfMemory ? 'died of OOM' : `failed (status ${run.status}, ${run.signal ?? ''}) ${run.stderr.slice(-400)}`} ` +
      `in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return [{ name: `large-state/heap-limit-${backend}`, value: ok ? 1 : 0, unit: 'completed' }];
}

/**
 * `large-state`: the LMDB backend against the heap backend on a keyed reduce over 1M keys (uniform and Zipf), and
 * 5M keys under a 256 MB heap, where only LMDB may finish.
 */
export async function largeState(): Promise<Result[]> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-large-state-'));
  try {
    return [
      // Uniform over 10⁶ keys, with issue #16's bar.
      ...(await throughput('lmdb-vs-heap-throughput-1M', makeEvents(EVENTS, KEYS), dir, { op: '>=', value: 0.2 })),
      ...(await throughput('lmdb-vs-heap-throughput-zipf', makeZipfEvents(EVENTS, KEYS), dir)),
      ...heapLimit('lmdb', dir),
      ...heapLimit('heap', dir),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
