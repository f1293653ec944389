import { fileURLToPath } from 'node:url';
import { builtinModules } from 'node:module';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

// One config for the library build (three entry points, dependencies left external) and for the tests, which
// import 'weir', 'weir/node' and 'weir/browser' exactly as users do, resolved to the sources.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^weir$/, replacement: src('index.ts') },
      { find: /^weir\/node$/, replacement: src('node/index.ts') },
      { find: /^weir\/browser$/, replacement: src('browser/index.ts') },
    ],
  },
  build: {
    lib: {
      entry: { index: src('index.ts'), node: src('node/index.ts'), browser: src('browser/index.ts') },
      formats: ['es'],
    },
    rollupOptions: {
      external: [/^rxjs/, 'superjson', 'crc-32', ...builtinModules, /^node:/],
    },
    sourcemap: true,
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
