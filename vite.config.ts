import { existsSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { playwright } from '@vitest/browser-playwright';
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/**
 * Tests that run in headless Chromium as well as in Node: the browser-only ones, and isomorphic ones that import
 * nothing from `node:` or 'weir/node'. A test that needs Node stays out of this list.
 */
const browserTests = [
  'test/browser/**/*.test.ts',
  'test/state/heapStateBackend.test.ts',
  'test/storage/memoryCheckpointStorage.test.ts',
  'test/core/operators.test.ts',
];

/** Debian's Chromium (`apt-get install chromium`), found on PATH; playwright's own browser downloads are not used. */
function findChromium(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const path = join(dir, name);
      if (dir !== '' && existsSync(path)) return path;
    }
  }
  return undefined;
}

function browserProject(): TestProjectInlineConfiguration[] {
  const chromium = findChromium();
  if (chromium) {
    return [
      {
        extends: true,
        // Pre-bundled up front, so the first run does not discover them mid-test and reload the page.
        optimizeDeps: { include: ['rxjs', 'rxjs/operators', 'superjson', 'crc-32', 'idb-keyval'] },
        test: {
          name: 'browser',
          include: browserTests,
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            instances: [{ browser: 'chromium' }],
            provider: playwright({
              launchOptions: {
                executablePath: chromium,
                // As root (CI) Chromium needs --no-sandbox; the rest keeps it off the network, which is closed here.
                args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
              },
            }),
          },
        },
      },
    ];
  }
  const advice = 'Install it with `sudo apt-get install -y chromium` (Debian/Ubuntu), or put a chromium binary on PATH.';
  if (process.env.CI === 'true') throw new Error(`Chromium was not found on PATH, and CI must run the browser tests. ${advice}`);
  const bar = '!'.repeat(100);
  console.warn(`\n${bar}\n!! Chromium not found on PATH: the BROWSER tests are SKIPPED, only the Node project runs.\n!! ${advice}\n${bar}\n`);
  return [];
}

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
      entry: { index: src('index.ts'), node: src('node/index.ts'), browser: src('browser/index.ts'), cli: src('node/cli/run.ts') },
      formats: ['es'],
    },
    rollupOptions: {
      external: [/^rxjs/, 'superjson', 'crc-32', 'idb-keyval', ...builtinModules, /^node:/],
    },
    sourcemap: true,
  },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two projects: every test in Node, and the browser and isomorphic tests in headless Chromium (skipped with a
    // warning where Chromium is missing, a failure under CI=true).
    projects: [
      {
        extends: true,
        test: { name: 'node', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/browser/**'] },
      },
      ...browserProject(),
    ],
  },
});
