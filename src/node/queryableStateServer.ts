import { Worker } from 'node:worker_threads';
import superjson from 'superjson';
import { CheckpointNotFoundError, JobDefinitionError } from '../core/errors.js';
import type { Key } from '../core/types.js';
import { API_PREFIX, ERROR_STATUS, type ErrorBody, type ErrorCode } from '../query/queryProtocol.js';
import { InvalidQueryError, KeyGroupNotOwnedError, QueryableStateUnavailableError, UnknownQueryableStateError } from '../query/queryErrors.js';
import type { KeyGroupPageOptions, KeyPage, KeyPageOptions, QueryableStateReader } from '../query/stateQueries.js';
import type { Registry } from 'prom-client';
import { promClient, registerPrometheusMetrics, type MetricsSource } from './metrics/prometheusMetrics.js';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { JobView } from '../runtime/jobView.js';
import { packageRoot } from './packageRoot.js';

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
  /** Milliseconds a client has to send a request's headers, from the moment it connects (10,000 by default; else 408). */
  headersTimeoutMs?: number;
  /** Milliseconds a client has to send a whole request, body included (30,000 by default; else 408). */
  requestTimeoutMs?: number;
  /** Milliseconds an idle kept-alive connection stays open after an answer (5,000 by default). */
  keepAliveTimeoutMs?: number;
  /** Open connections at most; one more is closed as soon as it is accepted (256 by default). */
  maxConnections?: number;
  /** The rate limiter's clock, in ms; `performance.now` by default. */
  clock?: () => number;
  /**
   * Serves the job's metrics in the Prometheus text format at `GET /metrics` (behind the same token and rate limit):
   * `true` for a registry of this job's metrics only, or a prom-client `Registry` to serve, to which the job's metrics
   * are added (see `registerPrometheusMetrics`). Off by default.
   */
  metrics?: boolean | Registry;
  /**
   * Serves the live job view, a page drawing `GET /v1/job` (the job's graph, rates, checkpoints and events, served
   * whenever the reader is a running job), at `/job`: `true` for the page built into the package (`dist/inspector`,
   * written by `npm run build`), or `{ uiDir }` for a directory holding a built `job.html`. Off by default. The page
   * and its scripts need no token; with `token`, open `/job#token=<token>` and the page sends it with its requests.
   */
  liveView?: boolean | { uiDir: string };
}

export interface QueryableStateServer {
  /** `http://<host>:<port>`, for `QueryableStateClient`. */
  readonly url: string;
  /** Stops listening and closes open connections (once; later calls return the same promise). */
  close(): Promise<void>;
}

/**
 * The HTTP worker's script. A URL of its own rather than inside `new Worker(…)`, which a bundler would take for a web
 * worker and rewrite; as an asset it is copied (or inlined as a data: URL, which Node's Worker accepts) as it is.
 */
const WORKER_FILE = new URL('./queryServerWorker.mjs', import.meta.url);

/** A query the HTTP worker forwards: the route, and the GET parameters or the POST body's text. */
interface ForwardedQuery {
  readonly id: number;
  /** The client's address, for the rate limit. */
  readonly client: string;
  readonly route: { kind: 'states' } | { kind: 'metrics' } | { kind: 'view' } | { kind: 'group' } | { kind: 'get' | 'keys'; name: string };
  readonly params?: Record<string, unknown>;
  readonly body?: string;
}

/** A query that fails with a status and an error code. */
class QueryError extends Error {
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
 * rate limit protect the job, and timeouts for slow and idle clients with a cap on connections protect the server. The HTTP server runs in a worker thread (src/node/queryServerWorker.mjs), so parsing
 * and answering requests takes nothing from the job's thread but one message per query; queries are cheap point reads
 * or bounded, yielding key scans, every handler catches everything, and a query the job does not answer in
 * `queryTimeoutMs` gets a 503 from the worker: no request can crash or stall the job, nor a stalled job the server.
 * @example
 * import { serveQueryableState } from 'weir/node';
 * const server = await serveQueryableState(running, { port: 9870, token: process.env.WEIR_TOKEN });
 * // curl -H "Authorization: Bearer $WEIR_TOKEN" 'http://127.0.0.1:9870/v1/states/clicks-per-user/get?key=ada'
 * await server.close();
 * // With `metrics: true`, the same server answers GET /metrics in the Prometheus text format:
 * await serveQueryableState(running, { port: 9870, metrics: true });   // curl http://127.0.0.1:9870/metrics
 */
export async function serveQueryableState(
  // `group` and `queryKeyGroups`: a scale-out member's reader (serveScaleOutQueries) serves its group's status at
  // GET /v1/group, and lists the keys of the key groups it is asked for (`keyGroups`).
  running: QueryableStateReader &
    Partial<MetricsSource> & { view?(): JobView; group?(): Promise<unknown>; queryKeyGroups?(name: string, keyGroups: unknown, options: KeyPageOptions): Promise<KeyPage> },
  options: QueryableStateServerOptions,
): Promise<QueryableStateServer> {
  const { port, host = '127.0.0.1', token, maxBodyBytes = 16 * 1024, rateLimit = { requests: 2_000, perMs: 1_000 }, queryTimeoutMs = 10_000 } = options;
  // Node keeps an idle or slow socket for 60 s by default, and any number of them: a few hundred idle clients would
  // hold the server's descriptors and memory. These bound how long a connection may idle and how many there are.
  const { headersTimeoutMs = 10_000, requestTimeoutMs = 30_000, keepAliveTimeoutMs = 5_000, maxConnections = 256 } = options;
  for (const [name, value] of Object.entries({ headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, maxConnections })) {
    if (!(Number.isSafeInteger(value) && value > 0)) throw new RangeError(`serveQueryableState: ${name} must be a positive integer, got ${String(value)}`);
  }
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new RangeError(`serveQueryableState: headersTimeoutMs (${headersTimeoutMs}) must not be over requestTimeoutMs (${requestTimeoutMs}): the headers are part of the request`);
  }
  if (!(Number.isInteger(port) && port >= 0 && port <= 65535)) throw new RangeError(`serveQueryableState: port must be an integer from 0 to 65535, got ${String(port)}`);
  if (token !== undefined && (typeof token !== 'string' || token === '')) throw new TypeError('serveQueryableState: token must be a non-empty string');
  if (!(Number.isInteger(maxBodyBytes) && maxBodyBytes > 0)) throw new RangeError(`serveQueryableState: maxBodyBytes must be a positive integer, got ${String(maxBodyBytes)}`);
  if (rateLimit !== false && !(rateLimit.requests > 0 && rateLimit.perMs > 0)) {
    throw new RangeError('serveQueryableState: rateLimit needs requests > 0 and perMs > 0 (or false for no limit)');
  }
  const metrics = metricsRegistry(running, options.metrics);
  const liveViewDir = liveViewUi(running, options.liveView);
  const limiter = rateLimit === false ? undefined : tokenBucket(rateLimit.requests, rateLimit.perMs, options.clock ?? (() => performance.now()));

  const answer = async (query: ForwardedQuery): Promise<{ status: number; headers: Record<string, string>; body: string }> => {
    const retryAfter = limiter?.take(query.client);
    if (retryAfter !== undefined) {
      throw new QueryError('rate-limited', `too many requests from this client; retry in ${Math.ceil(retryAfter / 1000)} s`, {
        'retry-after': String(Math.max(1, Math.ceil(retryAfter / 1000))),
      });
    }
    const { route } = query;
    if (route.kind === 'states') return ok({ states: running.queryableStates() });
    if (route.kind === 'view') return { status: 200, headers: { 'cache-control': 'no-store' }, body: JSON.stringify(running.view!()) };
    if (route.kind === 'group') return { status: 200, headers: { 'cache-control': 'no-store' }, body: JSON.stringify(await running.group!()) };
    if (route.kind === 'metrics') return { status: 200, headers: { 'content-type': metrics!.contentType, 'cache-control': 'no-store' }, body: await metrics!.metrics() };
    const body = query.body === undefined ? (query.params ?? {}) : parseBody(query.body);
    if (route.kind === 'get') {
      if (!('key' in body) || body.key === undefined) throw new QueryError('bad-request', `query of '${route.name}' needs a key`);
      return ok({ value: await running.query(route.name, body.key as Key, { asOf: body.asOf as number | undefined }) });
    }
    const { prefix, from, to, limit, cursor, asOf, keyGroups } = body as KeyGroupPageOptions;
    if (keyGroups === undefined) return ok(await running.queryKeys(route.name, { prefix, from, to, limit, cursor, asOf }));
    if (running.queryKeyGroups === undefined) throw new QueryError('bad-request', `keys of '${route.name}': keyGroups is for a scale-out member (serveScaleOutQueries); this server lists all its job's keys without it`);
    return ok(await running.queryKeyGroups(route.name, keyGroups, { prefix, from, to, limit, cursor, asOf }));
  };

  const worker = new Worker(WORKER_FILE, {
    workerData: {
      port,
      host,
      token,
      maxBodyBytes,
      queryTimeoutMs,
      headersTimeoutMs,
      requestTimeoutMs,
      keepAliveTimeoutMs,
      maxConnections,
      apiPrefix: API_PREFIX,
      metrics: metrics !== undefined,
      view: typeof running.view === 'function',
      group: typeof running.group === 'function',
      liveViewDir,
      errorStatus: ERROR_STATUS,
    },
  });
  const reply = (id: number, reply: { status: number; headers: Record<string, string>; body: string }) => worker.postMessage({ type: 'answer', id, ...reply });
  const listening = new Promise<{ address: string; family: string; port: number }>((resolve, reject) => {
    worker.on('message', (message: { type: string } & Record<string, unknown>) => {
      if (message.type === 'query') {
        const query = message as unknown as ForwardedQuery;
        answer(query).then(
          (answered) => reply(query.id, answered),
          (error: unknown) => reply(query.id, errorAnswer(error)),
        );
      } else if (message.type === 'listening') resolve(message as unknown as { address: string; family: string; port: number });
      else if (message.type === 'failed') reject(Object.assign(new Error(String(message.message)), { code: message.code }));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the queryable state server's worker exited (${code}) before listening`)));
  });
  let address: { address: string; family: string; port: number };
  try {
    address = await listening;
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  // From here a crash of the worker (there is none known) only ends the server, never the job.
  worker.on('error', () => undefined);
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        const done = () => void worker.terminate().then(() => resolve());
        worker.on('message', (message: { type: string }) => message.type === 'closed' && done());
        worker.once('exit', () => resolve());
        worker.postMessage({ type: 'close' });
      })),
  };
}

/** The registry `/metrics` serves, with the job's metrics in it; undefined when metrics are off. */
function metricsRegistry(running: Partial<MetricsSource>, option: boolean | Registry | undefined): Registry | undefined {
  if (option === undefined || option === false) return undefined;
  if (running.metrics === undefined) {
    throw new TypeError('serveQueryableState: metrics needs a running job (job.start()), which has metrics; this reader has none');
  }
  const registry = option === true ? new (promClient().Registry)() : option;
  registerPrometheusMetrics(running as MetricsSource, registry);
  return registry;
}

/** The directory of the built live view page; undefined when the page is off. */
function liveViewUi(running: { view?(): JobView; group?(): Promise<unknown> }, option: boolean | { uiDir: string } | undefined): string | undefined {
  if (option === undefined || option === false) return undefined;
  // A scale-out member's reader (serveScaleOutQueries) has the group's page instead of a job's.
  const page = typeof running.group === 'function' ? 'group.html' : 'job.html';
  if (page === 'job.html' && typeof running.view !== 'function') {
    throw new TypeError('serveQueryableState: liveView needs a running job (job.start() or startJob()), which has a view; this reader has none');
  }
  const dir = resolve(option === true ? join(packageRoot(), 'dist', 'inspector') : option.uiDir);
  if (!existsSync(join(dir, page))) {
    throw new TypeError(
      `serveQueryableState: liveView finds no built page (${join(dir, page)} is missing): build weir (npm run build, which writes dist/inspector) or pass liveView: { uiDir } with a built page's directory`,
    );
  }
  return dir;
}

/** A POST body: a superjson object. */
function parseBody(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let body: unknown;
  try {
    body = superjson.parse(text);
  } catch (error) {
    throw new QueryError('bad-request', `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new QueryError('bad-request', 'request body must be a JSON object (superjson: { "json": { … }, "meta": … })');
  }
  return body as Record<string, unknown>;
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

function ok(body: unknown): { status: number; headers: Record<string, string>; body: string } {
  return { status: 200, headers: { 'cache-control': 'no-store' }, body: superjson.stringify(body) };
}

function errorAnswer(error: unknown): { status: number; headers: Record<string, string>; body: string } {
  const { code, message, headers } = describeError(error);
  const body: ErrorBody = { error: { code, message } };
  if (error instanceof KeyGroupNotOwnedError) body.error = { ...body.error, keyGroup: error.keyGroup, owner: error.owner, url: error.url };
  return { status: ERROR_STATUS[code], headers, body: JSON.stringify(body) };
}

function describeError(error: unknown): { code: ErrorCode; message: string; headers: Record<string, string> } {
  if (error instanceof QueryError) return { code: error.code, message: error.message, headers: error.headers };
  const message = (error as Error)?.message ?? String(error);
  if (error instanceof InvalidQueryError || error instanceof JobDefinitionError) return { code: 'bad-request', message, headers: {} };
  if (error instanceof UnknownQueryableStateError) return { code: 'unknown-state', message, headers: {} };
  if (error instanceof CheckpointNotFoundError) return { code: 'checkpoint-not-found', message, headers: {} };
  if (error instanceof QueryableStateUnavailableError) return { code: 'unavailable', message, headers: {} };
  if (error instanceof KeyGroupNotOwnedError) return { code: 'not-owner', message, headers: {} };
  return { code: 'internal', message: `the query failed: ${message}`, headers: {} };
}
