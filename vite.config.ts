import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { playwright } from '@vitest/browser-playwright';
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { CHROMIUM_ADVICE, CHROMIUM_ARGS, findChromium } from './test/findChromium';
import { weirAliases } from './weirAliases';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/** Tests that need a browser (IndexedDB): they run in headless Chromium only. */
const browserOnlyTests = ['test/browser/**', 'test/storage/indexedDbCheckpointStorage.test.ts'];

/**
 * Tests that run in headless Chromium as well as in Node: the browser-only ones, and isomorphic ones that import
 * nothing from `node:` or 'weir/node'. A test that needs Node stays out of this list.
 */
const browserTests = [
  'test/browser/**/*.test.ts',
  'test/storage/indexedDbCheckpointStorage.test.ts',
  'test/state/heapStateBackend.test.ts',
  'test/storage/memoryCheckpointStorage.test.ts',
  'test/operators/operators.test.ts',
];

function browserProject(): TestProjectInlineConfiguration[] {
  const chromium = findChromium();
  if (chromium) {
    return [
      {
        extends: true,
        // Pre-bundled up front, so the first run does not discover them mid-test and reload the page.
        optimizeDeps: { include: ['rxjs', 'rxjs/operators', 'superjson', 'crc-32', 'idb-keyval', '@opentelemetry/api'] },
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
                args: CHROMIUM_ARGS,
              },
            }),
          },
        },
      },
    ];
  }
  const advice = CHROMIUM_ADVICE;
  if (process.env.CI === 'true') throw new Error(`Chromium was not found on PATH, and CI must run the browser tests. ${advice}`);
  const bar = '!'.repeat(100);
  console.warn(`\n${bar}\n!! Chromium not found on PATH: the BROWSER tests are SKIPPED, only the Node project runs.\n!! ${advice}\n${bar}\n`);
  return [];
}

const manifest = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const packages = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.devDependencies ?? {})];

// One config for the library build (entry points, dependencies left external) and for the tests, which
// import 'weir', 'weir/node' and 'weir/browser' exactly as users do, resolved to the sources.
export default defineConfig({
  resolve: {
    alias: weirAliases,
  },
  build: {
    lib: {
      entry: { index: src('index.ts'), node: src('node/index.ts'), browser: src('browser/index.ts'), testing: src('testing/index.ts'), cli: src('node/cli/run.ts'), jobWorker: src('node/jobWorker.ts') },
      formats: ['es'],
    },
    rollupOptions: {
      // Every package the library imports stays a dependency of the user's install, never bundled in.
      external: [...packages.map((name) => new RegExp(`^${name}(/|$)`)), ...builtinModules, /^node:/],
    },
    // A library ships readable code: the user's bundler minifies their app (weir included), and a stack trace or a
    // breakpoint in node_modules/weir/dist should show weir's names.
    minify: false,
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
        test: { name: 'node', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...browserOnlyTests] },
      },
      ...browserProject(),
    ],
  },
});
