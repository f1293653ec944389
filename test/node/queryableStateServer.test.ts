import { createConnection, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import superjson from 'superjson';
import {
  InvalidQueryError,
  QueryRateLimitedError,
  QueryServerUnreachableError,
  QueryUnauthorizedError,
  QueryableStateClient,
  UnknownQueryableStateError,
  CheckpointNotFoundError,
  memoryCheckpointStorage,
  type RunningJob,
} from 'weir';
import { serveQueryableState, type QueryableStateServer } from 'weir/node';
import { pausableSource } from '../checkpoint/fixtures';
import { expectedAfter, visits, visitsJob } from '../query/fixtures';

let stop: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(stop.map((fn) => fn()));
  stop = [];
});

/** The visits job paused after 20 visits (checkpointed as checkpoint 1), with a server in front of it. */
async function served(options: Partial<Parameters<typeof serveQueryableState>[1]> = {}): Promise<{ running: RunningJob; server: QueryableStateServer }> {
  const paused = pausableSource(visits, [20]);
  const { job } = visitsJob(paused.source, { storage: memoryCheckpointStorage(), chunkSize: 10 });
  const running = job.start();
  await paused.reached(20);
  await running.checkpoint();
  const server = await serveQueryableState(running, { port: 0, ...options });
  stop.push(async () => {
    await server.close();
    paused.releaseAll();
    await running.done;
  });
  return { running, server };
}

/** A raw TCP connection to the server at `url`, once it is established. */
function connect(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves with everything the server sent once it closed the connection (the client never closes it). */
function closedByServer(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString()));
    // A connection refused past the cap may be reset rather than ended.
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(received));
  });
}

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

describe('serveQueryableState and QueryableStateClient', () => {
  it('answers point queries and key listings with rich values, bound to 127.0.0.1', async () => {
    const { server } = await served();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = new QueryableStateClient(server.url);
    const expected = expectedAfter(20, 'user-07')!;
    expect(await client.get('visit-count', 'user-07')).toBe(expected.count);
    const pages = await client.get<Map<string, Date>>('last-visit-per-page', 'user-07');
    expect(pages).toBeInstanceOf(Map);
    expect(pages!.get('p1')).toBeInstanceOf(Date);
    expect(pages).toEqual(expected.pages);
    expect(await client.get('visit-count', 'nobody')).toBeUndefined();
    expect(await client.get('visit-count', 'user-07', { asOf: 1 })).toBe(expected.count);

    const first = await client.keys('visit-count', { prefix: 'user-', limit: 4 });
    expect(first.keys).toEqual(['user-00', 'user-01', 'user-02', 'user-03']);
    const second = await client.keys('visit-count', { prefix: 'user-', limit: 4, cursor: first.cursor });
    expect(second.keys).toEqual(['user-04', 'user-05', 'user-06', 'user-07']);
    expect((await client.states()).map((s) => s.name).sort()).toEqual(['avg-ms', 'last-visit-per-page', 'visit-count']);

    // curl-friendly GETs for string keys.
    const got = await fetch(`${server.url}/v1/states/visit-count/get?key=user-07`);
    expect(superjson.parse(await got.text())).toEqual({ value: expected.count });
    const listed = await fetch(`${server.url}/v1/states/visit-count/keys?prefix=admin-&limit=5`);
    expect(superjson.parse(await listed.text())).toEqual({ keys: ['admin-0', 'admin-1'] });
  });

  it('requires the bearer token when one is set (401)', async () => {
    const { server } = await served({ token: 's3cret' });
    await expect(new QueryableStateClient(server.url).get('visit-count', 'user-01')).rejects.toThrow(QueryUnauthorizedError);
    await expect(new QueryableStateClient(server.url, { token: 'wrong' }).get('visit-count', 'user-01')).rejects.toThrow(QueryUnauthorizedError);
    const response = await fetch(`${server.url}/v1/states`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(await new QueryableStateClient(server.url, { token: 's3cret' }).get('visit-count', 'user-01')).toBe(expectedAfter(20, 'user-01')!.count);
  });

  it('answers bad requests with 4xx and a clear message', async () => {
    const { server } = await served({ maxBodyBytes: 1024 });
    const malformed = await post(`${server.url}/v1/states/visit-count/get`, '{"json": {');
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error).toMatchObject({ code: 'bad-request', message: expect.stringMatching(/not valid JSON/) });

    const noKey = await post(`${server.url}/v1/states/visit-count/get`, superjson.stringify({}));
    expect(noKey.status).toBe(400);
    expect((await noKey.json()).error.message).toMatch(/needs a key/);

    const badLimit = await fetch(`${server.url}/v1/states/visit-count/keys?limit=abc`);
    expect(badLimit.status).toBe(400);
    const tooMany = await fetch(`${server.url}/v1/states/visit-count/keys?limit=100000`);
    expect(tooMany.status).toBe(400);
    expect((await tooMany.json()).error.message).toMatch(/limit must be an integer from 1 to 10000/);

    const unknown = await fetch(`${server.url}/v1/states/nope/get?key=a`);
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('unknown-state');
    expect((await fetch(`${server.url}/v2/whatever`)).status).toBe(404);

    const tooLarge = await post(`${server.url}/v1/states/visit-count/get`, superjson.stringify({ key: 'x'.repeat(100_000) }));
    expect(tooLarge.status).toBe(413);

    const deleted = await fetch(`${server.url}/v1/states`, { method: 'DELETE' });
    expect(deleted.status).toBe(405);
    expect(deleted.headers.get('allow')).toBe('GET, POST');

    const client = new QueryableStateClient(server.url);
    await expect(client.get('nope', 'a')).rejects.toThrow(UnknownQueryableStateError);
    await expect(client.keys('visit-count', { limit: 0 })).rejects.toThrow(InvalidQueryError);
    await expect(client.keys('visit-count', { cursor: '!!' })).rejects.toThrow(/cursor/);
    // Key groups are a scale-out member's to list (serveScaleOutQueries); a job's server lists all its keys.
    await expect(client.keys('visit-count', { keyGroups: [0] })).rejects.toThrow(new InvalidQueryError("keys of 'visit-count': keyGroups is for a scale-out member (serveScaleOutQueries); this server lists all its job's keys without it"));
    await expect(client.get('visit-count', 'user-01', { asOf: 42 })).rejects.toThrow(CheckpointNotFoundError);
    // The job is unharmed by all of it.
    expect(await client.get('visit-count', 'user-01')).toBe(expectedAfter(20, 'user-01')!.count);
  });

  it('limits the request rate per client (429)', async () => {
    const { server } = await served({ rateLimit: { requests: 3, perMs: 60_000 } });
    const client = new QueryableStateClient(server.url);
    for (let i = 0; i < 3; i++) await client.get('visit-count', 'user-01');
    const error = await client.get('visit-count', 'user-01').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueryRateLimitedError);
    expect((error as QueryRateLimitedError).retryAfterMs).toBeGreaterThanOrEqual(1000);
    const raw = await fetch(`${server.url}/v1/states`);
    expect(raw.status).toBe(429);
    expect(Number(raw.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('reports an unreachable server as QueryServerUnreachableError', async () => {
    const { server } = await served();
    const url = server.url;
    await server.close();
    await expect(new QueryableStateClient(url, { timeoutMs: 2_000 }).get('visit-count', 'user-01')).rejects.toThrow(QueryServerUnreachableError);
  });

  it('validates its options', async () => {
    const { running } = await served();
    await expect(serveQueryableState(running, { port: -1 })).rejects.toThrow(RangeError);
    await expect(serveQueryableState(running, { port: 0, token: '' })).rejects.toThrow(TypeError);
    await expect(serveQueryableState(running, { port: 0, maxConnections: 0 })).rejects.toThrow(/maxConnections must be a positive integer/);
    await expect(serveQueryableState(running, { port: 0, headersTimeoutMs: 2_000, requestTimeoutMs: 1_000 })).rejects.toThrow(/must not be over requestTimeoutMs/);
  });

  it('closes a connection that sends no request within headersTimeoutMs (408)', async () => {
    const { server } = await served({ headersTimeoutMs: 100, requestTimeoutMs: 200 });
    const socket = await connect(server.url);
    socket.write('GET /v1/states HTTP/1.1\r\nHost: x\r\n');
    // Without the timeout the server would keep this half-sent request for Node's 60 s.
    expect(await closedByServer(socket)).toMatch(/^HTTP\/1\.1 408/);
    const idle = await connect(server.url);
    expect(await closedByServer(idle)).toBeDefined();
  });

  it('closes an idle kept-alive connection after keepAliveTimeoutMs', async () => {
    const { server } = await served({ keepAliveTimeoutMs: 50 });
    const socket = await connect(server.url);
    socket.write('GET /v1/states HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    expect(await closedByServer(socket)).toMatch(/^HTTP\/1\.1 200/);
  });

  it('closes connections past maxConnections at once, and serves those it holds', async () => {
    const { server } = await served({ maxConnections: 2 });
    const held = [await connect(server.url), await connect(server.url)];
    const refused = await connect(server.url);
    expect(await closedByServer(refused)).toBe('');
    held[0]!.write('GET /v1/states HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await closedByServer(held[0]!)).toMatch(/^HTTP\/1\.1 200/);
    held[1]!.destroy();
  });
});
