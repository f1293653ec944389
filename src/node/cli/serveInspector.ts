import { createServer, type Server, type ServerResponse } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { extname, join, resolve, sep } from 'node:path';
import { CheckpointNotFoundError } from '../../core/errors.js';
import type { CheckpointStorage } from '../../core/types.js';

/** What `weir inspect --serve` serves: the built inspector page and a read-only view of one checkpoint storage. */
export interface InspectorServerOptions {
  storage: CheckpointStorage;
  /** The built inspector page: a directory holding `inspector.html` and its assets (`dist/inspector` in the package). */
  uiDir: string;
  /** Limit the inspector to these jobs (paths in the storage); all jobs by default. */
  jobs?: string[];
  /** 127.0.0.1 unless told otherwise. */
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
}

export interface InspectorServer {
  /** The inspector page, e.g. `http://127.0.0.1:41234/inspector.html?source=http`. */
  readonly url: string;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

/**
 * A small HTTP server for the visual inspector. The page reads the storage through a read-only file API and does
 * all decoding itself (the same code as on IndexedDB in the playground), so the server only lists and reads:
 * `GET /api/info`, `GET /api/list?dir=…` (JSON names), `GET /api/read?path=…` (file bytes, 404 when missing).
 * Nothing can be written or removed through it, and paths that climb out of the storage are refused.
 */
export async function serveInspector(options: InspectorServerOptions): Promise<InspectorServer> {
  const { storage } = options;
  const uiDir = resolve(options.uiDir);
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'text/plain', 'the inspector server is read-only: GET only\n');
    const answer = url.pathname.startsWith('/api/') ? api(url) : staticFile(url.pathname);
    answer.then(
      ({ status, type, body }) => send(response, status, type, body),
      (error: unknown) => send(response, 500, 'text/plain', `${(error as Error).message}\n`),
    );
  });

  type Answer = { status: number; type: string; body: string | Uint8Array };
  const json = (status: number, value: unknown): Answer => ({ status, type: 'application/json', body: JSON.stringify(value) });

  async function api(url: URL): Promise<Answer> {
    const path = url.searchParams.get('path') ?? url.searchParams.get('dir') ?? '';
    if (path.split(/[\\/]/).some((segment) => segment === '..')) return json(400, { error: `'${path}' climbs out of the storage ('..' is not allowed)` });
    switch (url.pathname) {
      case '/api/info':
        return json(200, { location: storage.location, jobs: options.jobs ?? null });
      case '/api/list':
        return json(200, await storage.list(path));
      case '/api/read':
        try {
          return { status: 200, type: 'application/octet-stream', body: await storage.read(path) };
        } catch (error) {
          if (error instanceof CheckpointNotFoundError) return json(404, { error: error.message });
          return json(500, { error: (error as Error).message });
        }
      default:
        return json(404, { error: `no such API: ${url.pathname}; there are /api/info, /api/list?dir=…, /api/read?path=…` });
    }
  }

  async function staticFile(pathname: string): Promise<Answer> {
    if (pathname === '/') return { status: 302, type: 'text/plain', body: '' };
    const file = resolve(join(uiDir, decodeURIComponent(pathname)));
    if (file !== uiDir && !file.startsWith(uiDir + sep)) return { status: 403, type: 'text/plain', body: 'forbidden\n' };
    try {
      if (!(await stat(file)).isFile()) throw new Error('not a file');
      return { status: 200, type: TYPES[extname(file)] ?? 'application/octet-stream', body: await readFile(file) };
    } catch {
      return { status: 404, type: 'text/plain', body: `not found: ${pathname}\n` };
    }
  }

  function send(response: ServerResponse, status: number, type: string, body: string | Uint8Array): void {
    const headers: Record<string, string> = { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };
    if (status === 302) headers.location = '/inspector.html?source=http';
    response.writeHead(status, headers);
    response.end(body);
  }

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolveListen());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/inspector.html?source=http`,
    close: () => new Promise((resolveClose) => server.close(() => resolveClose())),
  };
}
