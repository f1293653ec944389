import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import superjson from 'superjson';
import { CheckpointNotFoundError, JobDefinitionError } from '../core/errors';
import type { Key } from '../core/types';
import { API_PREFIX, ERROR_STATUS, type ErrorBody, type ErrorCode } from '../query/queryProtocol';
import { InvalidQueryError, QueryableStateUnavailableError, UnknownQueryableStateError } from '../query/queryErrors';
import type { KeyPageOptions, QueryableStateReader } from '../query/stateQueries';

export interface QueryableStateServerOptions {
  /** Port to listen on; 0 picks a free one (see `url`). */
  port: number;
  /** Interface to bind; `127.0.0.1` by default, so only this machine can connect. */
  host?: string;
  /** When set, every request needs `Authorization: Bearer <token>` (else 401). */
  token?: string;
  /** Largest request body accepted, in bytes (16 KiB by default; else 413). */
  maxBodyBytes?: number;
  /** Requests per client address per window (token bucket; else 429); `false` turns the limit off. */
  rateLimit?: { requests: number; perMs: number } | false;
  /** Milliseconds a live query may wait for a restarting job before it answers 503 (10,000 by default). */
  queryTimeoutMs?: number;
  /** The rate limiter's clock, in ms; `performance.now` by default. */
  clock?: () => number;
}

export interface QueryableStateServer {
  /** `http://<host>:<port>`, for `QueryableStateClient`. */
  readonly url: string;
  /** Stops listening and closes open connections (once; later calls return the same promise). */
  close(): Promise<void>;
}

/** A request that fails with a status and an error code. */
class HttpError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * Serves a running job's queryable state over HTTP+JSON (superjson bodies), read-only, for `QueryableStateClient`
 * or curl. Bound to 127.0.0.1 unless `host` says otherwise; bearer-token auth, a body size limit and a per-client
 * rate limit protect the job. Every handler catches everything, and queries are cheap point reads or bounded,
 * yielding key scans, so no request can crash or stall the job.
 * @example
 * import { serveQueryableState } from 'weir/node';
 * const server = await serveQueryableState(running, { port: 9870, token: process.env.WEIR_TOKEN });
 * // curl -H "Authorization: Bearer $WEIR_TOKEN" 'http://127.0.0.1:9870/v1/states/clicks-per-user/get?key=ada'
 * await server.close();
 */
export async function serveQueryableState(running: QueryableStateReader, options: QueryableStateServerOptions): Promise<QueryableStateServer> {
  const { port, host = '127.0.0.1', token, maxBodyBytes = 16 * 1024, rateLimit = { requests: 2_000, perMs: 1_000 }, queryTimeoutMs = 10_000 } = options;
  if (!(Number.isInteger(port) && port >= 0 && port <= 65535)) throw new RangeError(`serveQueryableState: port must be an integer from 0 to 65535, got ${String(port)}`);
  if (token !== undefined && (typeof token !== 'string' || token === '')) throw new TypeError('serveQueryableState: token must be a non-empty string');
  if (!(Number.isInteger(maxBodyBytes) && maxBodyBytes > 0)) throw new RangeError(`serveQueryableState: maxBodyBytes must be a positive integer, got ${String(maxBodyBytes)}`);
  if (rateLimit !== false && !(rateLimit.requests > 0 && rateLimit.perMs > 0)) {
    throw new RangeError('serveQueryableState: rateLimit needs requests > 0 and perMs > 0 (or false for no limit)');
  }
  const limiter = rateLimit === false ? undefined : tokenBucket(rateLimit.requests, rateLimit.perMs, options.clock ?? (() => performance.now()));
  const expected = token === undefined ? undefined : Buffer.from(`Bearer ${token}`);

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const retryAfter = limiter?.take(request.socket.remoteAddress ?? '');
    if (retryAfter !== undefined) {
      throw new HttpError('rate-limited', `too many requests from this client; retry in ${Math.ceil(retryAfter / 1000)} s`, {
        'retry-after': String(Math.max(1, Math.ceil(retryAfter / 1000))),
      });
    }
    if (expected !== undefined && !authorized(request.headers.authorization, expected)) {
      throw new HttpError('unauthorized', 'missing or wrong bearer token: send Authorization: Bearer <token>', { 'www-authenticate': 'Bearer' });
    }
    const url = new URL(request.url ?? '/', 'http://localhost');
    const route = parseRoute(url.pathname);
    const method = request.method ?? 'GET';
    if (method !== 'GET' && method !== 'POST') throw new HttpError('method-not-allowed', `${method} is not supported: this server is read-only (GET and POST)`, { allow: 'GET, POST' });
    if (route.kind === 'states') return send(response, { states: running.queryableStates() });
    const body = method === 'POST' ? await readBody(request, maxBodyBytes) : fromQueryString(url.searchParams, route.kind);
    if (route.kind === 'get') {
      if (!('key' in body) || body.key === undefined) throw new HttpError('bad-request', `query of '${route.name}' needs a key`);
      const value = await withTimeout(running.query(route.name, body.key as Key, { asOf: body.asOf as number | undefined }), queryTimeoutMs);
      return send(response, { value });
    }
    const { prefix, from, to, limit, cursor, asOf } = body as KeyPageOptions;
    return send(response, await withTimeout(running.queryKeys(route.name, { prefix, from, to, limit, cursor, asOf }), queryTimeoutMs));
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => sendError(request, response, error));
  });
  // A malformed request line or headers: answer 400 and drop the connection, never throw.
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      (closed ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      })),
  };
}

type Route = { kind: 'states' } | { kind: 'get' | 'keys'; name: string };

function parseRoute(pathname: string): Route {
  if (pathname === API_PREFIX || pathname === `${API_PREFIX}/`) return { kind: 'states' };
  const match = /^\/v1\/states\/([^/]+)\/(get|keys)$/.exec(pathname);
  if (!match) throw new HttpError('not-found', `no such endpoint ${pathname}; use ${API_PREFIX}, ${API_PREFIX}/<name>/get or ${API_PREFIX}/<name>/keys`);
  let name: string;
  try {
    name = decodeURIComponent(match[1]!);
  } catch {
    throw new HttpError('bad-request', `state name in ${pathname} is not valid percent-encoding`);
  }
  return { kind: match[2] as 'get' | 'keys', name };
}

/** GET parameters: keys and bounds are strings, numbers are parsed. */
function fromQueryString(params: URLSearchParams, kind: 'get' | 'keys'): Record<string, unknown> {
  const number = (name: string) => {
    const text = params.get(name);
    if (text === null) return undefined;
    const value = Number(text);
    if (text.trim() === '' || !Number.isFinite(value)) throw new HttpError('bad-request', `parameter ${name} must be a number, got ${JSON.stringify(text)}`);
    return value;
  };
  const text = (name: string) => params.get(name) ?? undefined;
  if (kind === 'get') return { key: text('key'), asOf: number('asOf') };
  return { prefix: text('prefix'), from: text('from'), to: text('to'), limit: number('limit'), cursor: text('cursor'), asOf: number('asOf') };
}

async function readBody(request: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const tooLarge = () => new HttpError('too-large', `request body is over the ${maxBytes}-byte limit`, { connection: 'close' });
  const declared = Number(request.headers['content-length']);
  if (declared > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  let body: unknown;
  try {
    body = superjson.parse(text);
  } catch (error) {
    throw new HttpError('bad-request', `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError('bad-request', 'request body must be a JSON object (superjson: { "json": { … }, "meta": … })');
  }
  return body as Record<string, unknown>;
}

function authorized(header: string | undefined, expected: Buffer): boolean {
  if (header === undefined) return false;
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A token bucket per client address; idle full buckets are dropped so the table stays small. */
function tokenBucket(requests: number, perMs: number, now: () => number) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const rate = requests / perMs;
  return {
    /** Takes one request's token; returns the ms to wait when there is none. */
    take(client: string): number | undefined {
      const time = now();
      if (buckets.size > 10_000) for (const [key, bucket] of buckets) if (bucket.tokens + (time - bucket.at) * rate >= requests) buckets.delete(key);
      const bucket = buckets.get(client) ?? { tokens: requests, at: time };
      bucket.tokens = Math.min(requests, bucket.tokens + (time - bucket.at) * rate);
      bucket.at = time;
      buckets.set(client, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return undefined;
      }
      return (1 - bucket.tokens) / rate;
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new HttpError('unavailable', `the job's state was not available within ${ms} ms (is it restarting?); retry later`)),
      ms,
    );
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function send(response: ServerResponse, body: unknown): void {
  const text = superjson.stringify(body);
  response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  response.end(text);
}

function sendError(request: IncomingMessage, response: ServerResponse, error: unknown): void {
  const { code, message, headers } = describeError(error);
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body: ErrorBody = { error: { code, message } };
  const text = JSON.stringify(body);
  response.writeHead(ERROR_STATUS[code], { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  response.end(text);
  // A body left unread (413) must not be parsed as the next request.
  if (!request.complete) request.resume();
}

function describeError(error: unknown): { code: ErrorCode; message: string; headers: Record<string, string> } {
  if (error instanceof HttpError) return { code: error.code, message: error.message, headers: error.headers };
  const message = (error as Error)?.message ?? String(error);
  if (error instanceof InvalidQueryError || error instanceof JobDefinitionError) return { code: 'bad-request', message, headers: {} };
  if (error instanceof UnknownQueryableStateError) return { code: 'unknown-state', message, headers: {} };
  if (error instanceof CheckpointNotFoundError) return { code: 'checkpoint-not-found', message, headers: {} };
  if (error instanceof QueryableStateUnavailableError) return { code: 'unavailable', message, headers: {} };
  return { code: 'internal', message: `the query failed: ${message}`, headers: {} };
}
