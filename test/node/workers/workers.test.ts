import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startJob } from 'weir/node';
import type { KeyedSumSettings } from './jobs/keyedSum.js';

const dir = mkdtempSync(join(tmpdir(), 'weir-workers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keyedSum = new URL('./jobs/keyedSum.ts', import.meta.url);
const preload = [new URL('./registerTsx.mjs', import.meta.url)];
let runs = 0;

/** The settings of a fresh run, with its own output file. */
function settings(overrides: Partial<KeyedSumSettings> = {}): KeyedSumSettings {
  runs++;
  return { name: `sum-${runs}`, out: join(dir, `out-${runs}.txt`), records: 2000, keys: 37, splits: 4, ...overrides };
}

async function run(job: KeyedSumSettings, options: { workers: number; restore?: 'latest' }) {
  process.env.WEIR_TEST_JOB = JSON.stringify(job);
  const running = await startJob(keyedSum, { ...options, preload });
  const result = await running.done;
  return { result, lines: lines(job.out) };
}

function lines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n').filter(Boolean).sort();
}

/** What the job writes, computed here: every running sum of every key once. */
function expected(records: number, keys: number): string[] {
  const sums = new Map<string, number>();
  const out: string[] = [];
  for (let i = 0; i < records; i++) {
    const key = `k${i % keys}`;
    // The job reads 4 splits in any interleaving, but each key's records in order within its split: the final sums
    // are what every interleaving agrees on, so the tests compare those (and the line count).
    sums.set(key, (sums.get(key) ?? 0) + i);
    out.push(key);
  }
  return [...sums].map(([key, sum]) => `${key}=${sum}`).sort();
}

/** Each key's last line: the final sums. */
function finals(output: string[]): string[] {
  const last = new Map<string, number>();
  for (const line of output) {
    const [key, value] = line.split('=');
    last.set(key!, Math.max(last.get(key!) ?? 0, Number(value)));
  }
  return [...last].map(([key, sum]) => `${key}=${sum}`).sort();
}

describe('startJob on worker threads', { timeout: 240_000 }, () => {
  it('computes with 2 workers what 1 worker computes, exactly once', async () => {
    const two = await run(settings({ checkpoints: 'memory' }), { workers: 2 });
    const one = await run(settings({ checkpoints: 'memory' }), { workers: 1 });
    expect(two.result.status).toBe('finished');
    expect(two.lines).toHaveLength(2000);
    expect(finals(two.lines)).toEqual(expected(2000, 37));
    expect(finals(one.lines)).toEqual(finals(two.lines));
    expect(one.lines).toHaveLength(2000);
  });
});
