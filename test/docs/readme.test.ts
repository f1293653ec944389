import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format } from 'node:util';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

// Every ```ts block of README.md is a runnable example: it must type-check against the public API and, started in an
// empty scratch directory, run to the end twice in a row in that directory (as a user runs a program twice), printing
// what README says it prints. A README that drifts from the code fails here.
//
// The convention for what an example prints: the ```output block right after it is what a run prints (console.log,
// info, warn and error, one line each as Node formats them), and an ```output rerun block after that is what the
// second run prints where it differs from the first. An example without an ```output block prints nothing. The scratch
// directory's path reads as `.` in the expected output (checkpoint paths on the file system are absolute).
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

interface Fence {
  info: string;
  code: string;
  line: number;
}
const fences: Fence[] = Array.from(readme.matchAll(/^( *)```([^\n]*)\n([\s\S]*?)^\1```[ \t]*$/gm), (match) => ({
  info: match[2]!.trim(),
  // A block inside a list item is indented with it.
  code: match[3]!.replace(new RegExp(`^${match[1]}`, 'gm'), ''),
  line: readme.slice(0, match.index).split('\n').length + 1,
}));

interface Example {
  index: number;
  line: number;
  code: string;
  /** What each of the two runs prints. */
  expected: [string[], string[]];
}
const lines = (text: string) => text.replace(/\n$/, '').split('\n');
const examples: Example[] = [];
fences.forEach((fence, i) => {
  if (fence.info !== 'ts') return;
  const first = fences[i + 1]?.info === 'output' ? fences[i + 1]! : undefined;
  const rerun = first && fences[i + 2]?.info === 'output rerun' ? fences[i + 2]! : undefined;
  const once = first ? lines(first.code) : [];
  examples.push({ index: examples.length + 1, line: fence.line, code: fence.code, expected: [once, rerun ? lines(rerun.code) : once] });
});

const generated = join(root, 'test/docs/.examples');
rmSync(generated, { recursive: true, force: true });
mkdirSync(generated, { recursive: true });
// `export {}` makes each example a module of its own (top-level await, no shared names). Each run imports a copy of
// its own, so that the second run evaluates the program again.
const file = (example: Example, run: number) => join(generated, `example${example.index}${run === 1 ? '' : `.run${run}`}.ts`);
for (const example of examples) {
  for (const run of [1, 2]) writeFileSync(file(example, run), `${example.code}\nexport {};\n`);
}
afterAll(() => rmSync(generated, { recursive: true, force: true }));

/** Imports `path` in `cwd` and returns what it printed, with `cwd` written as `.`. */
async function run(path: string, cwd: string): Promise<string[]> {
  const printed: string[] = [];
  const methods = ['log', 'info', 'warn', 'error'] as const;
  const saved = methods.map((method) => console[method]);
  const previous = process.cwd();
  process.chdir(cwd);
  for (const method of methods) console[method] = (...args: unknown[]) => void printed.push(...format(...args).split('\n'));
  try {
    await import(path);
  } finally {
    methods.forEach((method, i) => (console[method] = saved[i]!));
    process.chdir(previous);
  }
  return printed.map((line) => line.replaceAll(cwd, '.'));
}

describe('README examples', () => {
  it('has examples', () => {
    expect(examples.length).toBeGreaterThan(10);
  });

  it('has no output block without an example before it', () => {
    const stray = fences.filter((fence, i) => fence.info.startsWith('output') && !['ts', 'output'].includes(fences[i - 1]?.info ?? ''));
    expect(stray.map((fence) => `README.md:${fence.line}`)).toEqual([]);
  });

  it('type-check against the public API', () => {
    const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
    const program = ts.createProgram(
      examples.map((example) => file(example, 1)),
      { ...config.options, noEmit: true, noUnusedLocals: false },
    );
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file?.fileName.startsWith(generated))
      .map((d) => {
        const example = Number(/example(\d+)\.ts$/.exec(d.file!.fileName)![1]);
        const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
        return `README.md:${examples[example - 1]!.line + line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
    expect(problems).toEqual([]);
  }, 120_000);

  for (const example of examples) {
    it(`example ${example.index} (README.md line ${example.line}) runs twice from an empty directory and prints what README says`, async () => {
      const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'weir-readme-')));
      try {
        expect(readdirSync(cwd)).toEqual([]);
        expect(await run(file(example, 1), cwd), 'first run').toEqual(example.expected[0]);
        expect(await run(file(example, 2), cwd), 'second run, in the same directory').toEqual(example.expected[1]);
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    }, 150_000);
  }
});
