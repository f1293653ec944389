import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// weir as its users get it: `npm pack` (its prepack runs `npm run build`), the tarball installed into a fresh project
// of its own, and then only that project: its node, its tsc, its `weir` bin. Every other test imports the sources,
// where a build can break what users get (minified error names, declarations that do not resolve, files left out
// of the package) while they all pass.
const repo = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
const subpaths = ['weir', 'weir/node', 'weir/browser', 'weir/testing'];

/**
 * The environment of the commands run here: this process's, without what vitest and the npm script running it set
 * (NODE_ENV=test would make vite build a test build; npm_package_* would describe weir to the consumer's npm).
 */
const env = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !/^(VITEST|NODE_ENV$|TEST$|npm_package_|npm_lifecycle_)/.test(name)),
);

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; resolves with its exit code and output, whatever the code. */
function run(command: string, args: string[], cwd: string): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: error && typeof error.code !== 'number' ? `${stderr}${error.message}` : stderr });
    });
  });
}

/** Runs a command that must succeed; fails with its output otherwise. */
async function must(command: string, args: string[], cwd: string): Promise<string> {
  const ran = await run(command, args, cwd);
  if (ran.code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${ran.code}\n${ran.stdout}\n${ran.stderr}`);
  return ran.stdout;
}

/** The "A first job" example at the top of README, as TypeScript (type-checked) and as the JavaScript node runs. */
const readme = await readFile(join(repo, 'README.md'), 'utf8');
const firstJob = /## A first job\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
/** What README says the first job prints on its first run, and on a second run in the same directory. */
const firstJobSection = readme.slice(readme.indexOf('## A first job'), readme.indexOf('\n## ', readme.indexOf('## A first job') + 1));
const printed = (kind: 'output' | 'output rerun') => new RegExp(`\`\`\`${kind}\\n([\\s\\S]*?)\`\`\``).exec(firstJobSection)?.[1];

let project: string;

beforeAll(async () => {
  if (!firstJob) throw new Error('README.md has no "## A first job" section opening with a ```ts block');
  project = await mkdtemp(join(tmpdir(), 'weir-package-'));
  const packs = join(project, '.packs');
  await mkdir(packs);
  await must('npm', ['pack', '--pack-destination', packs], repo);
  const tarball = (await readdir(packs)).find((name) => name.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack wrote no tarball in ${packs}`);
  await writeFile(join(project, 'package.json'), `${JSON.stringify({ name: 'weir-consumer', private: true, type: 'module' }, null, 2)}\n`);
  await must(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      join(packs, tarball),
      `typescript@${manifest.devDependencies.typescript}`,
      `@types/node@${manifest.devDependencies['@types/node']}`,
    ],
    project,
  );
  await writeFile(join(project, 'firstJob.ts'), `${firstJob}\nexport {};\n`);
  await writeFile(
    join(project, 'firstJob.mjs'),
    ts.transpileModule(firstJob, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText,
  );
}, 300_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

describe('the installed package', () => {
  it('imports every subpath in node', async () => {
    const script = `for (const path of ${JSON.stringify(subpaths)}) console.log(path, Object.keys(await import(path)).length);`;
    const out = await must(process.execPath, ['--input-type=module', '-e', script], project);
    for (const path of subpaths) expect(out).toMatch(new RegExp(`^${path} [1-9]\\d*$`, 'm'));
  });

  it('keeps the name of every exported error class', async () => {
    // Every export that is an Error subclass, from every subpath: its name and how it prints (a class with structured
    // constructor arguments, such as UserFunctionError, still prints its own name first).
    const script = `
      const found = [];
      for (const path of ${JSON.stringify(subpaths)}) {
        for (const [name, value] of Object.entries(await import(path))) {
          if (typeof value !== 'function' || !(value.prototype instanceof Error)) continue;
          const error = new value('m');
          found.push({ path, exported: name, name: error.name, printed: String(error) });
        }
      }
      console.log(JSON.stringify(found));`;
    const found = JSON.parse(await must(process.execPath, ['--input-type=module', '-e', script], project)) as { path: string; exported: string; name: string; printed: string }[];
    expect(found.map((error) => error.exported)).toEqual(expect.arrayContaining(['WeirError', 'CheckpointCorruptedError', 'QueryRateLimitedError', 'HarnessInputError']));
    const wrong = found.filter((error) => error.name !== error.exported || !error.printed.startsWith(`${error.exported}: `));
    expect(wrong).toEqual([]);
  });

  // What a user's tsc sees: every subpath, a few real types and the README's first job, strict and with
  // skipLibCheck off, so the declarations weir ships (and everything they reach) must check.
  const consumer = `
import { createJob, fromArray, keyBy, reduce, collect, valueState, QueryableStateClient, CheckpointCorruptedError, WeirError } from 'weir';
import type { CheckpointStorage, Job, JobResult, RunningJob, StateBackend, Flow } from 'weir';
import { fsCheckpointStorage, lmdbStateBackend, serveQueryableState, type LmdbStateBackendOptions } from 'weir/node';
import { indexedDbCheckpointStorage } from 'weir/browser';
import { harness, record, HarnessInputError, type Fragment, type Harness } from 'weir/testing';

type Click = { user: string; n: number };
const storage: CheckpointStorage = fsCheckpointStorage('./checkpoints');
const options: LmdbStateBackendOptions = { path: './state' };
const backend: StateBackend = lmdbStateBackend(options);
const job: Job = createJob({ name: 'clicks', stateBackend: backend, checkpoints: { storage, interval: 500 } });
const out = collect<Click>();
const perUser: Flow<Click> = job.source(fromArray<Click>([{ user: 'ann', n: 1 }]), { uid: 'clicks' })
  .pipe(keyBy((c) => c.user), reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'per-user' }));
perUser.pipe(out.sink());
const running: RunningJob = job.start();
const done: Promise<JobResult> = running.done;
const fragment: Fragment<Click, Click> = (input) => input.pipe(keyBy((c) => c.user), reduce((a, b) => ({ ...a, n: a.n + b.n }), { uid: 'sum' }));
const tested: Promise<Harness<Click, Click>> = harness(fragment);
const error: WeirError = new CheckpointCorruptedError('x');
export { done, tested, error, valueState, QueryableStateClient, serveQueryableState, indexedDbCheckpointStorage, record, HarnessInputError };
`;
  // A browser app: no @types/node, so what 'weir', 'weir/browser' and 'weir/testing' declare must not need it.
  const browserConsumer = `
import { createJob, fromArray, collect } from 'weir';
import { indexedDbCheckpointStorage } from 'weir/browser';
import { harness } from 'weir/testing';

const job = createJob({ name: 'app', checkpoints: { storage: indexedDbCheckpointStorage({ dbName: 'app' }), interval: 1_000 } });
const out = collect<number>();
job.source(fromArray([1, 2, 3]), { uid: 'numbers' }).pipe(out.sink());
export { harness };
`;
  const setups = [
    { name: 'nodenext', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], lib: ['es2022'], files: ['consumer.ts', 'firstJob.ts'] },
    { name: 'node16', module: 'node16', moduleResolution: 'node16', types: ['node'], lib: ['es2022'], files: ['consumer.ts', 'firstJob.ts'] },
    { name: 'bundler', module: 'esnext', moduleResolution: 'bundler', types: ['node'], lib: ['es2022', 'dom'], files: ['consumer.ts', 'firstJob.ts'] },
    { name: 'bundler, browser only', module: 'esnext', moduleResolution: 'bundler', types: [], lib: ['es2022', 'dom'], files: ['browserConsumer.ts'] },
  ];
  for (const setup of setups) {
    it(`type-checks a consumer under ${setup.name}, strict, skipLibCheck false`, async () => {
      await writeFile(join(project, 'consumer.ts'), consumer);
      await writeFile(join(project, 'browserConsumer.ts'), browserConsumer);
      const config = join(project, `tsconfig.${setup.name.replace(/\W+/g, '-')}.json`);
      const compilerOptions = { module: setup.module, moduleResolution: setup.moduleResolution, target: 'es2022', lib: setup.lib, types: setup.types, strict: true, skipLibCheck: false, noEmit: true };
      await writeFile(config, JSON.stringify({ compilerOptions, files: setup.files }, null, 2));
      const ran = await run(process.execPath, [join(project, 'node_modules/typescript/bin/tsc'), '-p', config, '--listFiles'], project);
      const lines = ran.stdout.split('\n');
      expect(lines.filter((line) => /error TS\d+/.test(line)).join('\n')).toBe('');
      expect(ran.code).toBe(0);
      // lmdb's index.d.ts fails under nodenext with skipLibCheck off (TS1203, `export =` in an ES module): weir's
      // public declarations must never reach it.
      expect(lines.filter((line) => line.includes('/node_modules/lmdb/'))).toEqual([]);
      expect(lines.some((line) => line.includes('/node_modules/weir/dist/types/'))).toBe(true);
    }, 120_000);
  }

  it('runs the README\'s first job, and restores it on the second run', async () => {
    const cwd = join(project, 'first-job');
    await mkdir(cwd);
    expect(printed('output')).toContain('started fresh');
    expect(await must(process.execPath, [join(project, 'firstJob.mjs')], cwd)).toBe(printed('output'));
    // The same program again: restored from checkpoint 1, which holds the whole input, so nothing is emitted twice.
    expect(printed('output rerun')).toContain('restored from checkpoint 1');
    expect(await must(process.execPath, [join(project, 'firstJob.mjs')], cwd)).toBe(printed('output rerun'));
  });
});

describe('the installed weir bin', () => {
  let bin: string;
  let checkpoints: string;
  let server: ChildProcess | undefined;

  beforeAll(async () => {
    bin = join(project, 'node_modules/.bin/weir');
    const cwd = join(project, 'inspected');
    await mkdir(cwd);
    await must(process.execPath, [join(project, 'firstJob.mjs')], cwd);
    checkpoints = join(cwd, 'checkpoints');
  }, 60_000);

  afterAll(() => {
    server?.kill('SIGTERM');
  });

  it('with no arguments, or an unknown command, prints the usage and exits 2', async () => {
    for (const args of [[], ['frobnicate']]) {
      const ran = await run(bin, args, project);
      expect(ran.code).toBe(2);
      expect(ran.stderr).toMatch(/usage: weir inspect/);
    }
  });

  it('inspects a checkpoint directory', async () => {
    const ran = await run(bin, ['inspect', checkpoints], project);
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/job clicks: 1 checkpoint, 0 savepoints/);
    expect(ran.stdout).toMatch(/operator per-user/);
  });

  it('serves the visual inspector, its scripts and styles, and the file API', async () => {
    server = spawn(bin, ['inspect', checkpoints, '--serve'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const child = server;
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /http:\/\/127\.0\.0\.1:\d+\/\S+/.exec(out);
        if (match) resolve(match[0]);
      });
      child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.once('exit', (code) => reject(new Error(`weir inspect --serve exited with ${code}: ${out}`)));
    });
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toMatch(/<title>weir inspector<\/title>/);
    const scripts = Array.from(html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g), (match) => match[1]!);
    const styles = Array.from(html.matchAll(/<link\b[^>]*\brel="stylesheet"[^>]*\bhref="([^"]+)"/g), (match) => match[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    expect(styles.length).toBeGreaterThan(0);
    for (const [references, type] of [[scripts, /^text\/javascript/], [styles, /^text\/css/]] as const) {
      for (const reference of references) {
        const asset = await fetch(new URL(reference, url));
        expect(asset.status, reference).toBe(200);
        expect(asset.headers.get('content-type'), reference).toMatch(type);
        expect((await asset.text()).length, reference).toBeGreaterThan(0);
      }
    }
    const list = await fetch(new URL('/api/list?dir=clicks', url));
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual(['chk-1']);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    server = undefined;
  });
  it('serves the live job view: its page, scripts and styles from the package, and GET /v1/job', async () => {
    // A job of the consumer's own, served with liveView: true, which finds the page in the installed package.
    await writeFile(
      join(project, 'liveView.mjs'),
      `import { createJob, fromArray, keyBy, reduce, collect } from 'weir';
import { serveQueryableState } from 'weir/node';
const job = createJob({ name: 'live', checkpoints: {} });
job.source(fromArray(['a', 'b', 'a']), { uid: 'words' }).pipe(keyBy((w) => w), reduce((a) => a, { uid: 'same' }), collect().sink({ uid: 'out' }));
const running = job.start();
await running.done;
const server = await serveQueryableState(running, { port: 0, liveView: true });
const page = await fetch(server.url + '/job');
const html = await page.text();
const refs = [...html.matchAll(/(?:src|href)="([^"]+\\.(?:js|css))"/g)].map((m) => m[1]);
const assets = await Promise.all(refs.map(async (ref) => { const r = await fetch(new URL(ref, server.url + '/job')); return [ref, r.status, r.headers.get('content-type'), (await r.text()).length]; }));
const view = await (await fetch(server.url + '/v1/job')).json();
console.log(JSON.stringify({ status: page.status, type: page.headers.get('content-type'), title: /<title>(.*)<\\/title>/.exec(html)?.[1], assets, operators: view.operators.map((o) => o.uid), checkpoints: view.checkpoints.map((c) => c.status) }));
await server.close();
`,
    );
    const out = JSON.parse(await must(process.execPath, ['liveView.mjs'], project)) as {
      status: number;
      type: string;
      title: string;
      assets: [string, number, string, number][];
      operators: string[];
      checkpoints: string[];
    };
    expect(out).toMatchObject({ status: 200, title: 'weir live job view', operators: ['words', 'same', 'out'], checkpoints: ['completed'] });
    expect(out.type).toMatch(/^text\/html/);
    expect(out.assets.some(([ref]) => ref.endsWith('.js'))).toBe(true);
    expect(out.assets.some(([ref]) => ref.endsWith('.css'))).toBe(true);
    for (const [ref, status, type, length] of out.assets) {
      expect(status, ref).toBe(200);
      expect(type, ref).toMatch(ref.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      expect(length, ref).toBeGreaterThan(0);
    }
  });
});
