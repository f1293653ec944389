import superjson from 'superjson';
import { CheckpointNotFoundError, type WeirError } from '../core/errors.js';
import type { Key } from '../core/types.js';
import { API_PREFIX, type ErrorBody, type ErrorCode } from './queryProtocol.js';
import {
  InvalidQueryError,
  KeyGroupNotOwnedError,
  QueryRateLimitedError,
  QueryServerError,
  QueryServerUnreachableError,
  QueryUnauthorizedError,
  QueryableStateUnavailableError,
  UnknownQueryableStateError,
} from './queryErrors.js';
import type { QueryableStateInfo } from './queryableStateRegistry.js';
import type { KeyGroupPageOptions, KeyPage, QueryOptions } from './stateQueries.js';

export interface QueryableStateClientOptions {
  /** Sent as `Authorization: Bearer <token>`, for a server started with a token. */
  token?: string;
  /** Milliseconds before a request counts as unreachable (10,000 by default). */
  timeoutMs?: number;
  /** The `fetch` to use (the global one by default). */
  fetch?: typeof fetch;
}

/**
 * Reads a running job's queryable state over HTTP, from Node or a browser, from a server started with
 * `serveQueryableState` (from 'weir/node'). Values keep their rich types (Date, Map, Set, BigInt). Failures are
 * typed: `UnknownQueryableStateError`, `QueryUnauthorizedError`, `QueryServerUnreachableError`,
 * `QueryRateLimitedError`, `InvalidQueryError`, `QueryableStateUnavailableError`, `CheckpointNotFoundError`,
 * `QueryServerError`.
 * @example
 * const client = new QueryableStateClient('http://127.0.0.1:9870', { token: process.env.WEIR_TOKEN });
 * const count = await client.get<number>('clicks-per-user', 'ada');
 * const { keys, cursor } = await client.keys('clicks-per-user', { prefix: 'user-', limit: 100 });
 */
export class QueryableStateClient {
  private readonly base: string;
  private readonly fetch: typeof fetch;

  constructor(
    url: string,
    private readonly options: QueryableStateClientOptions = {},
  ) {
    this.base = url.replace(/\/+$/, '');
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') throw new TypeError('QueryableStateClient needs fetch: pass options.fetch on runtimes without a global fetch');
    this.fetch = fetchImpl.bind(globalThis);
  }

  /** The value `key` holds in queryable state `name` (live, or as of checkpoint `asOf`); undefined when none. */
  async get<T = unknown>(name: string, key: Key, options: QueryOptions = {}): Promise<T | undefined> {
    const body = await this.request<{ value: T | undefined }>('POST', `${stateUrl(name)}/get`, { key, asOf: options.asOf });
    return body.value;
  }

  /**
   * A page of keys of queryable state `name`, in key order; pass `cursor` back for the next page. `keyGroups` asks a
   * scale-out member (`serveScaleOutQueries`) for those of its key groups (`ScaleOutQueryClient.keys` lists a group).
   */
  async keys(name: string, options: KeyGroupPageOptions = {}): Promise<KeyPage> {
    const { prefix, from, to, limit, cursor, asOf, keyGroups } = options;
    return this.request<KeyPage>('POST', `${stateUrl(name)}/keys`, { prefix, from, to, limit, cursor, asOf, ...(keyGroups === undefined ? {} : { keyGroups }) });
  }

  /** The job's queryable states registered so far. */
  async states(): Promise<QueryableStateInfo[]> {
    return (await this.request<{ states: QueryableStateInfo[] }>('GET', API_PREFIX)).states;
  }

  private async request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const url = `${this.base}${path}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.token !== undefined) headers.authorization = `Bearer ${this.options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    try {
      response = await this.fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : superjson.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      text = await response.text();
    } catch (error) {
      throw new QueryServerUnreachableError(
        `queryable state server at ${this.base} cannot be reached (${(error as Error)?.message ?? String(error)}); ` +
          'check that the job serves its state (serveQueryableState) and the URL, host and port',
        { cause: error },
      );
    }
    if (response.ok) {
      try {
        return superjson.parse<T>(text);
      } catch (error) {
        throw new QueryServerError(`${method} ${url} answered ${response.status} with a body that is not superjson; is this a weir queryable state server?`, { cause: error });
      }
    }
    throw errorOf(response, text, `${method} ${url}`);
  }
}

function stateUrl(name: string): string {
  return `${API_PREFIX}/${encodeURIComponent(name)}`;
}

function errorOf(response: Response, text: string, what: string): WeirError {
  let parsed: ErrorBody['error'] | undefined;
  try {
    parsed = (JSON.parse(text) as ErrorBody).error;
  } catch {
    parsed = undefined;
  }
  const message = parsed?.message ?? `${what} failed with HTTP ${response.status}`;
  const code: ErrorCode | undefined = parsed?.code;
  switch (code) {
    case 'unknown-state':
      return new UnknownQueryableStateError(message);
    case 'checkpoint-not-found':
      return new CheckpointNotFoundError(message);
    case 'bad-request':
    case 'too-large':
      return new InvalidQueryError(message);
    case 'unauthorized':
      return new QueryUnauthorizedError(message);
    case 'rate-limited': {
      const seconds = Number(response.headers.get('retry-after'));
      return new QueryRateLimitedError(message, Number.isFinite(seconds) ? seconds * 1000 : undefined);
    }
    case 'unavailable':
      return new QueryableStateUnavailableError(message);
    case 'not-owner':
      return new KeyGroupNotOwnedError(message, parsed?.keyGroup, parsed?.owner, parsed?.url);
    default:
      return new QueryServerError(message);
  }
}
