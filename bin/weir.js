#!/usr/bin/env node
// The `weir` command. In a checkout of the repository (src/ present) it runs the TypeScript sources through tsx's
// loader, so `npx weir` and `node bin/weir.js` work without a build; an installed package runs the built dist/cli.js.
import { existsSync } from 'node:fs';

const source = new URL('../src/node/cli/run.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/cli.js', import.meta.url).href);
}
