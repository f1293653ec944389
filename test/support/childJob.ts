// Machinery shared by the tests that run a job in a child process and kill it with SIGKILL (test/faults/crash.test.ts,
// test/faults/killCampaign.test.ts): bundling the child, running it with a kill schedule, the kill-and-restart cycles,
// and a readable description of an output mismatch.
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A job fixture bundled into one JavaScript file; `remove` deletes it. */
export interface BundledFixture {
  readonly file: string;
  remove(): Promise<void>;
}

/**
 * Bundles a TypeScript fixture once, with the esbuild that tsx itself uses: the child then starts in a fraction of
 * the CPU time `node --import tsx` takes (the loader thread, the transform cache), which adds up over dozens of
 * restarts on a 2-core machine. 'weir' and 'weir/node' are resolved through the `paths` of tsconfig.json; packages
 * stay external, and the bundle sits under node_modules/.cache so that node resolves them from there.
 */
export async function bundleFixture(fixture: string): Promise<BundledFixture> {
  const name = fixture.replace(/^.*\//, '').replace(/\.ts$/, '');
  const file = join(ROOT, 'node_modules/.cache/weir-crash-test', `${name}-${process.pid}.mjs`);
  const esbuild = createRequire(createRequire(import.meta.url).resolve('tsx'))('esbuild') as typeof import('esbuild');
  await esbuild.build({
    entryPoints: [fixture],
    outfile: file,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'error',
  });
  return { file, remove: () => rm(file, { force: true }) };
}

export interface ChildRun {
  /** Exit code, or null when killed. */
  code: number | null;
  killed: boolean;
  /** Milliseconds from the child's `started` line to its exit. */
  ranMs: number;
  /** The `hook <name>` lines the child printed before it exited. */
  hooks: string[];
  stdout: string;
  stderr: string;
}

export interface KillPlan {
  /** SIGKILL this many ms after the child reports `started`, if it still runs. */
  afterMs?: number;
  /** SIGKILL at once when the child prints `hook <name>` for the `(skip + 1)`-th time (it sleeps there, waiting). */
  onHook?: { name: string; skip: number };
}

/**
 * Runs a bundled job once. The child prints `started` once it runs and `hook <name>` when it reaches a fault point;
 * the plan says when to kill it.
 */
export function runChild(bundle: BundledFixture, args: string[], plan: KillPlan = {}, env: Record<string, string> = {}): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bundle.file, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    let startedAt: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    let killed = false;
    const hooks: string[] = [];
    let hookCount = 0;
    const kill = () => {
      // Only a kill that reaches a running child counts.
      if (child.exitCode === null && child.signalCode === null) killed = child.kill('SIGKILL');
    };
    let pending = '';
    child.stdout.on('data', (data: Buffer) => {
      stdout += data.toString();
      pending += data.toString();
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line === 'started' && startedAt === undefined) {
          startedAt = performance.now();
          if (plan.afterMs !== undefined) timer = setTimeout(kill, plan.afterMs);
        } else if (line.startsWith('hook ')) {
          const name = line.slice(5);
          hooks.push(name);
          if (plan.onHook?.name === name && hookCount++ === plan.onHook.skip) kill();
        }
      }
    });
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const ranMs = startedAt === undefined ? 0 : performance.now() - startedAt;
      resolve({ code, killed: killed && signal === 'SIGKILL', ranMs, hooks, stdout, stderr });
    });
  });
}

/** What `killCycles` saw: the kills that landed, the runs that finished, and how each finished run's output differed. */
export interface KillCycles {
  kills: number;
  completed: number;
  mismatches: string[];
}

/**
 * Kills a job over and over until `minKills` kills landed. A cycle starts from an empty directory `<base>/cycle-<n>`
 * (output in `out/out.jsonl`) and restarts the job after every kill until a run finishes, whose output must be
 * `expected`; cycles repeat until enough kills landed (a run that ends before its kill is simply a finished cycle).
 * `run` runs the job once in a cycle's directory (it decides when to kill it); `afterRun` looks at what a run, killed
 * or not, left behind.
 */
export async function killCycles(options: {
  base: string;
  minKills: number;
  expected: string;
  run: (dir: string) => Promise<ChildRun>;
  afterRun?: (dir: string, run: ChildRun, where: string) => Promise<void>;
  /** Applied to the output and `expected` before they are compared (sorting lines, for a job whose order varies). */
  normalize?: (output: string) => string;
}): Promise<KillCycles> {
  const { base, minKills, run, afterRun, normalize = (output: string) => output } = options;
  const expected = normalize(options.expected);
  const result: KillCycles = { kills: 0, completed: 0, mismatches: [] };
  for (let cycle = 0; result.kills < minKills; cycle++) {
    const dir = join(base, `cycle-${cycle}`);
    await mkdir(join(dir, 'out'), { recursive: true });
    for (let attempt = 0; ; attempt++) {
      if (attempt > 40) throw new Error(`cycle ${cycle}: the job did not finish after ${attempt} restarts; it makes no progress`);
      const child = await run(dir);
      await afterRun?.(dir, child, `cycle ${cycle}, attempt ${attempt}`);
      if (child.killed) {
        result.kills++;
        continue;
      }
      expect(child.code, `cycle ${cycle}, attempt ${attempt} failed:\n${child.stderr}`).toBe(0);
      const actual = normalize(await readFile(join(dir, 'out', 'out.jsonl'), 'utf8'));
      result.completed++;
      if (actual !== expected) result.mismatches.push(`cycle ${cycle} (after ${attempt} kills): ${describeMismatch(actual, expected)}`);
      break;
    }
    await rm(dir, { recursive: true, force: true });
  }
  return result;
}

/** How the committed output differs from the expected one, for the failure message. */
export function describeMismatch(actual: string, expected: string): string {
  const got = actual.split('\n');
  const want = expected.split('\n');
  const first = want.findIndex((line, i) => got[i] !== line);
  const counts = new Map<string, number>();
  for (const line of got) counts.set(line, (counts.get(line) ?? 0) + 1);
  const duplicates = Array.from(counts.values()).filter((n) => n > 1).length;
  return `${got.length - 1} lines instead of ${want.length - 1}, ${duplicates} duplicated, first difference at line ${first + 1}: ${JSON.stringify(got[first])} instead of ${JSON.stringify(want[first])}`;
}
