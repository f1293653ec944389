import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from '../packageRoot.js';
import { fsCheckpointStorage } from '../../storage/fsCheckpointStorage.js';
import { resolveTarget } from './inspectCommand.js';
import { serveInspector, type InspectorServer } from './serveInspector.js';

export interface ServeOptions {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  /** Resolves when the server should close; the process's SIGINT/SIGTERM by default. */
  until?: Promise<void>;
}

/**
 * `weir inspect <path> --serve`: serves the visual inspector on 127.0.0.1 (a free port) over the checkpoints and
 * savepoints under the path, prints its URL and runs until interrupted. The page is the one the package ships
 * (`dist/inspector`, written by `npm run build`), or the directory in `WEIR_INSPECTOR_UI`; in a checkout where it is
 * not built yet, it is built first with vite.
 */
export async function inspectServeCommand(path: string, options: ServeOptions): Promise<number> {
  const target = await resolveTarget(resolve(path));
  if (typeof target === 'string') {
    options.err.write(`weir inspect: ${target}\n`);
    return 1;
  }
  const uiDir = await inspectorUi(options.err);
  if (typeof uiDir !== 'string') return 1;
  let server: InspectorServer;
  try {
    server = await serveInspector({ storage: fsCheckpointStorage(target.root), uiDir, jobs: target.jobs });
  } catch (error) {
    options.err.write(`weir inspect --serve: cannot listen on 127.0.0.1: ${(error as Error).message}\n`);
    return 1;
  }
  options.out.write(`weir inspector for ${target.root}: ${server.url}\n(read-only; Ctrl+C stops it)\n`);
  await (options.until ?? interrupted());
  await server.close();
  return 0;
}

function interrupted(): Promise<void> {
  return new Promise((done) => {
    process.once('SIGINT', () => done());
    process.once('SIGTERM', () => done());
  });
}

/**
 * The directory of the built inspector page. An installed weir ships it in `dist/inspector`, so the command starts
 * without vite; only a checkout that was never built builds it, once, the way `npm run build` does.
 */
async function inspectorUi(err: NodeJS.WritableStream): Promise<string | undefined> {
  const fromEnv = process.env.WEIR_INSPECTOR_UI;
  if (fromEnv) {
    if (existsSync(join(fromEnv, 'inspector.html'))) return fromEnv;
    err.write(`weir inspect --serve: WEIR_INSPECTOR_UI=${fromEnv} holds no inspector.html\n`);
    return undefined;
  }
  const root = packageRoot();
  const built = join(root, 'dist', 'inspector');
  if (existsSync(join(built, 'inspector.html'))) return built;
  const config = join(root, 'playground', 'vite.config.ts');
  if (!existsSync(config)) {
    err.write(`weir inspect --serve: this weir package lacks its inspector page (no ${built}); reinstall weir, or pass a built page's directory in WEIR_INSPECTOR_UI\n`);
    return undefined;
  }
  err.write('weir inspect --serve: building the inspector page once (vite build playground --mode inspector)…\n');
  try {
    const vite = await import('vite');
    await vite.build({ configFile: config, mode: 'inspector', logLevel: 'warn' });
  } catch (error) {
    err.write(`weir inspect --serve: building the inspector page failed: ${(error as Error).message}\n`);
    return undefined;
  }
  return built;
}
