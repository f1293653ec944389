import { rm } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { weirAliases } from '../weirAliases';

/** Inside the checkout, so that the build's bare imports (rxjs, superjson…) resolve to its node_modules. */
const OUT = new URL('./.parallel-build/', import.meta.url);

/** The engine's Node entry and the `parallel` job module, built to JavaScript as users run them (from dist). */
export interface ParallelBuild {
  /** The built `weir/node` entry, whose `startJob` spawns workers on the built jobWorker.js. */
  node: URL;
  /** bench/parallelJob.ts, built against the same engine chunks. */
  job: URL;
  remove(): Promise<void>;
}

/**
 * Builds src/node (with the worker entry) and bench/parallelJob.ts into one JavaScript build, outside the timed runs:
 * users run weir from its build, where a worker loads plain JavaScript; from the sources each worker would start a
 * TypeScript loader thread and compile the engine's modules first, on every run.
 */
export async function buildParallel(): Promise<ParallelBuild> {
  const src = (path: string) => fileURLToPath(new URL(`../src/${path}`, import.meta.url));
  const outDir = fileURLToPath(OUT);
  await build({
    configFile: false,
    logLevel: 'warn',
    resolve: { alias: weirAliases },
    build: {
      outDir,
      emptyOutDir: true,
      minify: false,
      lib: {
        entry: { node: src('node/index.ts'), jobWorker: src('node/jobWorker.ts'), parallelJob: fileURLToPath(new URL('./parallelJob.ts', import.meta.url)) },
        formats: ['es'],
      },
      // Packages stay imports (resolved from the checkout's node_modules), as in the library build.
      rollupOptions: { external: [/^[^./]/, ...builtinModules, /^node:/] },
    },
  });
  return {
    node: new URL('./node.js', OUT),
    job: new URL('./parallelJob.js', OUT),
    remove: () => rm(outDir, { recursive: true, force: true }),
  };
}
