import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { weirAliases } from '../weirAliases';

// The playground and the visual inspector: two pages of one app, importing weir from the sources as users import
// the package. `npm run playground` serves it; `npm run build:playground` writes static files to playground/dist,
// which `weir inspect --serve` serves.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  resolve: { alias: weirAliases },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
    // Unminified: error class names (JobDefinitionError, …) stay readable in messages; it is a local dev tool.
    minify: false,
    rollupOptions: {
      input: {
        playground: fileURLToPath(new URL('./index.html', import.meta.url)),
        inspector: fileURLToPath(new URL('./inspector.html', import.meta.url)),
      },
    },
  },
});
