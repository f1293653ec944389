import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

// Every ```ts block of README.md is a runnable example: it must type-check against the public API, and run to the
// end in a scratch directory (which holds the input files the examples read). A README that drifts from the code
// fails here.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = Array.from(readme.matchAll(/```ts\n([\s\S]*?)```/g), (match, i) => ({
  index: i + 1,
  line: readme.slice(0, match.index).split('\n').length + 1,
  code: match[1]!,
}));
const generated = join(root, 'test/docs/.examples');
rmSync(generated, { recursive: true, force: true });
mkdirSync(generated, { recursive: true });
// `export {}` makes each example a module of its own (top-level await, no shared names).
for (const block of blocks) writeFileSync(join(generated, `example${block.index}.ts`), `${block.code}\nexport {};\n`);
afterAll(() => rmSync(generated, { recursive: true, force: true }));

describe('README examples', () => {
  it('has examples', () => {
    expect(blocks.length).toBeGreaterThan(10);
  });

  it('type-check against the public API', () => {
    const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
    const program = ts.createProgram(
      blocks.map((block) => join(generated, `example${block.index}.ts`)),
      { ...config.options, noEmit: true, noUnusedLocals: false },
    );
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file?.fileName.startsWith(generated))
      .map((d) => {
        const example = Number(/example(\d+)\.ts$/.exec(d.file!.fileName)![1]);
        const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
        return `README.md:${blocks[example - 1]!.line + line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
    expect(problems).toEqual([]);
  }, 120_000);

  for (const block of blocks) {
    it(`example ${block.index} (README.md line ${block.line}) runs`, async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'weir-readme-'));
      const clicks = Array.from({ length: 50 }, (_, i) => JSON.stringify({ user: `u${i % 5}`, n: 1, page: `/p${i % 3}`, ts: i * 1000 }));
      const tx = Array.from({ length: 50 }, (_, i) => JSON.stringify({ account: `a${i % 4}`, amount: i, ts: i * 1000 }));
      writeFileSync(join(cwd, 'clicks.jsonl'), `${clicks.join('\n')}\n`);
      writeFileSync(join(cwd, 'tx.jsonl'), `${tx.join('\n')}\n`);
      const previous = process.cwd();
      const log = console.log;
      process.chdir(cwd);
      console.log = () => undefined;
      try {
        await import(join(generated, `example${block.index}.ts`));
      } finally {
        console.log = log;
        process.chdir(previous);
        rmSync(cwd, { recursive: true, force: true });
      }
    }, 30_000);
  }
});
