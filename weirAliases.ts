import { fileURLToPath } from 'node:url';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/**
 * 'weir', 'weir/node', 'weir/browser' and 'weir/testing' resolved to the sources, for everything vite serves or
 * tests from this checkout (the test projects, the browser bench page, the playground), so that code there imports
 * weir exactly as users of the package do.
 */
export const weirAliases = [
  { find: /^weir$/, replacement: src('index.ts') },
  { find: /^weir\/node$/, replacement: src('node/index.ts') },
  { find: /^weir\/browser$/, replacement: src('browser/index.ts') },
  { find: /^weir\/testing$/, replacement: src('testing/index.ts') },
];
