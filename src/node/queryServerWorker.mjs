// The HTTP side of `serveQueryableState`, in a worker thread of its own: parsing requests, the bearer token, the body
// size limit, routing and writing answers cost ~100 µs of CPU per request (a third of it the write system call),
// which here is not taken from the job's thread. Each query goes to the job's thread as one message and comes back
// as the answer's status, headers and body; everything about the job's state (validation, superjson, rate limits,
// error messages) stays there (see queryableStateServer.ts). Plain JavaScript with node: imports only, so that Node
// runs it as it is, from the sources and from the build.
import { timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

/** @type {{ metrics: boolean, view: boolean, liveViewDir: string | undefined, port: number, host: string, token: string | undefined, maxBodyBytes: number, queryTimeoutMs: number, headersTimeoutMs: number, requestTimeoutMs: number, keepAliveTimeoutMs: number, maxConnections: number, apiPrefix: string, errorStatus: Record<string, number>, group: boolean }} */
const { port, host, token, maxBodyBytes, queryTimeoutMs, headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, maxConnections, apiPrefix, errorStatus, metrics, view, liveViewDir, group } =
  workerData;
const expected = token === undefined ? undefined : Buffer.from(`Bearer ${token}`);
const jobThread = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);

/** Requests waiting for the job's thread, by id. */
const waiting = new Map();
let nextId = 0;

class HttpError extends Error {
  /** @param {string} code @param {string} message @param {Record<string, string>} [headers] */
  constructor(code, message, headers = {}) {
    super(message);
    this.code = code;
    this.headers = headers;
  }
}

/** @param {import('node:http').ServerResponse} response @param {number} status @param {Record<string, string>} headers @param {string} body */
function write(response, status, headers, body) {
  if (response.headersSent || response.destroyed) return;
  // An answer may name its own type (the Prometheus text of /metrics); queries answer JSON.
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

/** @param {import('node:http').IncomingMessage} request @param {import('node:http').ServerResponse} response @param {HttpError} error */
function fail(request, response, error) {
  write(response, errorStatus[error.code] ?? 500, error.headers, JSON.stringify({ error: { code: error.code, message: error.message } }));
  // A body left unread (413) must not be parsed as the next request.
  if (!request.complete) request.resume();
}

/** @param {string} pathname */
function parseRoute(pathname) {
  if (pathname === apiPrefix || pathname === `${apiPrefix}/`) return { kind: 'states' };
  if (metrics && pathname === '/metrics') return { kind: 'metrics' };
  if (view && pathname === '/v1/job') return { kind: 'view' };
  if (group && pathname === '/v1/group') return { kind: 'group' };
  const match = /^\/v1\/states\/([^/]+)\/(get|keys)$/.exec(pathname);
  if (!match) throw new HttpError('not-found', `no such endpoint ${pathname}; use ${apiPrefix}, ${apiPrefix}/<name>/get or ${apiPrefix}/<name>/keys`);
  try {
    return { kind: match[2], name: decodeURIComponent(match[1]) };
  } catch {
    throw new HttpError('bad-request', `state name in ${pathname} is not valid percent-encoding`);
  }
}

/** GET parameters: keys and bounds are strings, numbers are parsed. @param {URLSearchParams} params @param {string} kind */
function fromQueryString(params, kind) {
  /** @param {string} name */
  const number = (name) => {
    const text = params.get(name);
    if (text === null) return undefined;
    const value = Number(text);
    if (text.trim() === '' || !Number.isFinite(value)) throw new HttpError('bad-request', `parameter ${name} must be a number, got ${JSON.stringify(text)}`);
    return value;
  };
  /** @param {string} name */
  const text = (name) => params.get(name) ?? undefined;
  if (kind === 'get') return { key: text('key'), asOf: number('asOf') };
  return { prefix: text('prefix'), from: text('from'), to: text('to'), limit: number('limit'), cursor: text('cursor'), asOf: number('asOf') };
}

/** The request body as text, at most `maxBodyBytes`. @param {import('node:http').IncomingMessage} request @returns {Promise<string>} */
function readBody(request) {
  const tooLarge = () => new HttpError('too-large', `request body is over the ${maxBodyBytes}-byte limit`, { connection: 'close' });
  if (Number(request.headers['content-length']) > maxBodyBytes) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    /** @type {Buffer[]} */
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        request.removeAllListeners('data');
        reject(tooLarge());
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/** @param {string | undefined} header */
function authorized(header) {
  if (expected === undefined) return true;
  if (header === undefined) return false;
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const PAGE_TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.map': 'application/json' };

/**
 * The live view's page and its scripts (`liveView`), read from the built page's directory: the files weir ships,
 * served without the token (a browser cannot send one when it opens a page); the page sends it to /v1/job (or
 * /v1/group, the group's page).
 * Only plain file names under assets/ are served, so no path leaves the directory. Undefined for other paths.
 * @param {string} pathname @returns {Promise<{ type: string, body: Buffer } | undefined> | undefined}
 */
function pageFile(pathname) {
  if (liveViewDir === undefined) return undefined;
  const asset = /^(?:\/job|\/group)?\/assets\/([\w.-]+)$/.exec(pathname)?.[1];
  // A scale-out member's server (`group`) serves the group's page at /group, a job's the job view at /job.
  const html = group ? (pathname === '/group' || pathname === '/group/' ? 'group.html' : undefined) : pathname === '/job' || pathname === '/job/' ? 'job.html' : undefined;
  const file = html ?? (asset !== undefined && !asset.startsWith('.') ? join('assets', asset) : undefined);
  if (file === undefined) return undefined;
  return readFile(join(liveViewDir, file)).then(
    (body) => ({ type: PAGE_TYPES[/** @type {keyof typeof PAGE_TYPES} */ (extname(file))] ?? 'application/octet-stream', body }),
    () => undefined,
  );
}

/** @param {import('node:http').IncomingMessage} request @param {import('node:http').ServerResponse} response */
async function handle(request, response) {
  const page = (request.method === 'GET' || request.method === 'HEAD') && pageFile(new URL(request.url ?? '/', 'http://localhost').pathname);
  if (page) {
    const file = await page;
    if (file === undefined) throw new HttpError('not-found', `no such file ${request.url}`);
    response.writeHead(200, { 'content-type': file.type, 'content-length': file.body.length, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
    response.end(request.method === 'HEAD' ? undefined : file.body);
    return;
  }
  if (!authorized(request.headers.authorization)) {
    throw new HttpError('unauthorized', 'missing or wrong bearer token: send Authorization: Bearer <token>', { 'www-authenticate': 'Bearer' });
  }
  const method = request.method ?? 'GET';
  const url = new URL(request.url ?? '/', 'http://localhost');
  const route = parseRoute(url.pathname);
  if (method !== 'GET' && method !== 'POST') throw new HttpError('method-not-allowed', `${method} is not supported: this server is read-only (GET and POST)`, { allow: 'GET, POST' });
  const query =
    route.kind === 'states' || route.kind === 'metrics' || route.kind === 'view' || route.kind === 'group'
      ? { route }
      : method === 'POST'
        ? { route, body: await readBody(request) }
        : { route, params: fromQueryString(url.searchParams, route.kind) };
  const id = nextId++;
  const timer = setTimeout(() => {
    waiting.delete(id);
    fail(request, response, new HttpError('unavailable', `the job's state was not available within ${queryTimeoutMs} ms (is it restarting?); retry later`));
  }, queryTimeoutMs);
  waiting.set(id, { response, timer });
  jobThread.postMessage({ type: 'query', id, client: request.socket.remoteAddress ?? '', ...query });
}

const server = createServer(
  {
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: keepAliveTimeoutMs,
    // Node looks for requests past their timeout every 30 s by default, which would let a slow client stay that
    // much longer: look as often as a tenth of the shorter timeout, but not more than every 10 ms.
    connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(headersTimeoutMs / 10))),
  },
  (request, response) => {
    handle(request, response).catch((error) =>
      fail(request, response, error instanceof HttpError ? error : new HttpError('internal', `the query failed: ${error?.message ?? String(error)}`)),
    );
  },
);
// A connection past the cap is closed as soon as it is accepted.
server.maxConnections = maxConnections;
// A malformed request line or headers: answer 400 and drop the connection, never throw; a request not sent within
// headersTimeoutMs or requestTimeoutMs: 408.
server.on('clientError', (error, socket) => {
  const timedOut = /** @type {NodeJS.ErrnoException} */ (error).code === 'ERR_HTTP_REQUEST_TIMEOUT';
  if (socket.writable) socket.end(`HTTP/1.1 ${timedOut ? '408 Request Timeout' : '400 Bad Request'}\r\nConnection: close\r\n\r\n`);
  else socket.destroy();
});

jobThread.on('message', (message) => {
  if (message.type === 'answer') {
    const entry = waiting.get(message.id);
    // Answered after its timeout: the client already has its 503.
    if (entry === undefined) return;
    waiting.delete(message.id);
    clearTimeout(entry.timer);
    write(entry.response, message.status, message.headers, message.body);
  } else if (message.type === 'close') {
    server.close(() => jobThread.postMessage({ type: 'closed' }));
    server.closeAllConnections();
  }
});

server.once('error', (error) => jobThread.postMessage({ type: 'failed', message: error.message, code: /** @type {NodeJS.ErrnoException} */ (error).code }));
server.listen(port, host, () => {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  jobThread.postMessage({ type: 'listening', address: address.address, family: address.family, port: address.port });
});
