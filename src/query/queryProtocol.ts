/**
 * The wire protocol shared by the queryable state server (`weir/node`) and `QueryableStateClient`: HTTP+JSON,
 * successful bodies in superjson (so Dates, Maps, Sets and BigInts arrive as they are), errors as plain JSON
 * `{ "error": { "code", "message" } }`.
 *
 *     GET  /v1/states                                          → { states: QueryableStateInfo[] }
 *     POST /v1/states/<name>/get    { key, asOf? }             → { value }
 *     GET  /v1/states/<name>/get?key=<string>&asOf=<id>        → { value }          (string keys, for curl)
 *     POST /v1/states/<name>/keys   { prefix?, from?, to?, limit?, cursor?, asOf? } → { keys, cursor? }
 *     GET  /v1/states/<name>/keys?prefix=&from=&to=&limit=&cursor=&asOf=          → { keys, cursor? }
 *
 * A scale-out member (`serveScaleOutQueries`) lists the keys of the key groups it is asked for, all its own:
 *
 *     POST /v1/states/<name>/keys   { keyGroups, prefix?, from?, to?, limit?, cursor? } → { keys, cursor? }
 */
export const API_PREFIX = '/v1/states';

/** Error codes and the status each is sent with. */
export const ERROR_STATUS = {
  'bad-request': 400,
  unauthorized: 401,
  'unknown-state': 404,
  'checkpoint-not-found': 404,
  'not-found': 404,
  'method-not-allowed': 405,
  'too-large': 413,
  // A scale-out member asked for a key group it does not own; the body names the owner.
  'not-owner': 421,
  'rate-limited': 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorBody {
  error: { code: ErrorCode; message: string; keyGroup?: number; owner?: string; url?: string };
}
