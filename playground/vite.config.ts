import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { weirAliases } from '../weirAliases';

const page = (name: string) => fileURLToPath(new URL(`./${name}.html`, import.meta.url));

// The playground and the visual inspector: two pages of one app, importing weir from the sources as users import
// the package. `npm run playground` serves it; `npm run build:playground` writes both pages to playground/dist.
// `--mode inspector` (part of `npm run build`) writes the inspector page, the live job view (job.html) and the
// scale-out group's page (group.html, served by serveScaleOutQueries) to
// dist/inspector, inside the package, where `weir inspect --serve` and `serveQueryableState({ liveView: true })`
// find them in an installed weir.
export default defineConfig(({ mode }) => {
  const inspectorOnly = mode === 'inspector';
  return {
    root: fileURLToPath(new URL('.', import.meta.url)),
    base: './',
    resolve: { alias: weirAliases },
    build: {
      outDir: inspectorOnly ? fileURLToPath(new URL('../dist/inspector', import.meta.url)) : 'dist',
      emptyOutDir: true,
      chunkSizeWarningLimit: 1500,
      // Unminified: the pages are a local dev tool, and their code reads as it was written in the browser's devtools.
      minify: false,
      rollupOptions: {
        input: inspectorOnly ? [page('inspector'), page('job'), page('group')] : [page('index'), page('inspector'), page('job'), page('group')],
      },
    },
  };
});
