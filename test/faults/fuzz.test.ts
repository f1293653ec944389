import { request } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import CRC32 from 'crc-32';
import { Subject } from 'rxjs';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  collect,
  createJob,
  fromArray,
  fromAsyncIterable,
  fromIterable,
  fromObservable,
  keyBy,
  memoryCheckpointStorage,
  readSavepoint,
  reduce,
  valueState,
  process as processRecords,
  WeirError,
  type CheckpointStorage,
} from 'weir';
import { fileSink, fromFile, serveQueryableState, type QueryableStateServer } from 'weir/node';
import { encodeFile } from '../../src/storage/fileFormat';
import { loadCheckpoint } from '../../src/checkpoint/loadCheckpoint';
import { readings, type Reading } from '../checkpoint/jobFixtures';
import { deepJson, hostileValue, int, mutateBytes, mutateJson, pick, pollution } from '../support/mutate';
import { random, type Random } from '../support/random';

// Fuzzing every reader of persisted or received bytes: `_metadata` and state files (decoded, loaded and restored
// into a running job), savepoints through the State Processor API, the file sink's restored transactions, source
// offsets, and the queryable state server's requests. Each target gets at least 10k seeded mutations; only typed
// `WeirError`s may come out (no TypeError, RangeError, crash or hang), and no prototype may be polluted.
// FUZZ_LONG=1 runs 20× more cases; FUZZ_SEED replays a run; FUZZ_DEBUG=1 adds stacks to findings. The harness's snapshot reader goes through
// `loadCheckpoint`, fuzzed here.

const LONG = process.env.FUZZ_LONG === '1';
const CASES = LONG ? 200_000 : 10_000;
const SEED = Number(process.env.FUZZ_SEED ?? 0xf022);
/**
 * How long a target may take: every case must run (a fuzz run that stops early on a loaded machine would pass with
 * less coverage than it claims, and one that fails for it would fail on load, not on a finding), so this only bounds
 * a hang of the whole target. About 40 s per target on a quiet 2-core machine, under 60 s at a load of 15.
 */
const TARGET_TIMEOUT_MS = LONG ? 60 * 60_000 : 10 * 60_000;
const CASE_TIMEOUT_MS = 5_000;

const counts = new Map<string, number>();

function seedOf(name: string): number {
  let hash = SEED;
  for (const char of name) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return hash >>> 0;
}

/** Runs `cases` mutated inputs through `run`; returns what went wrong (untyped errors, hangs, pollution). */
async function fuzz<T>(name: string, generate: (next: Random, i: number) => T, run: (input: T) => unknown, cases = CASES): Promise<string[]> {
  const next = random(seedOf(name));
  const findings: string[] = [];
  let done = 0;
  for (; done < cases; done++) {
    const input = generate(next, done);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        Promise.resolve().then(() => run(input)),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`hang: no answer within ${CASE_TIMEOUT_MS} ms`)), CASE_TIMEOUT_MS))),
      ]);
    } catch (error) {
      if (!(error instanceof WeirError)) findings.push(`case ${done}: ${(error as Error)?.name}: ${String((error as Error)?.message ?? error).slice(0, 300)}${process.env.FUZZ_DEBUG ? (error as Error)?.stack : ""}`);
    } finally {
      clearTimeout(timer);
    }
    const polluted = pollution();
    if (polluted) {
      findings.push(`case ${done}: ${polluted}`);
      for (const key of Object.keys(Object.prototype)) delete (Object.prototype as Record<string, unknown>)[key];
    }
    if (findings.length >= 20) break;
  }
  counts.set(name, done);
  return findings;
}

// ---------------------------------------------------------------------------------------------------------------
// A real checkpoint to mutate: the sums job (source offset, keyed state, collect sink), checkpointed at its end.
// ---------------------------------------------------------------------------------------------------------------

const JOB = 'sums';
let baseFiles: Map<string, Uint8Array>;
let baseDir: string;
let tmp: string;

function sumsJob(storage: CheckpointStorage) {
  const job = createJob({ name: JOB, checkpoints: { storage }, chunkSize: 10, onWarning: () => undefined });
  job.source(fromArray(readings), { uid: 'in' }).pipe(
    keyBy((r) => r.key),
    reduce((a, b) => ({ key: a.key, n: a.n + b.n }), { uid: 'sum' }),
    collect<Reading>().sink({ uid: 'out' }),
  );
  return job;
}

/** A memory storage holding the base checkpoint with `file` replaced by `bytes`. */
async function storageWith(file: string, bytes: Uint8Array): Promise<CheckpointStorage> {
  const storage = memoryCheckpointStorage({ maxStateSize: 64 * 1024 * 1024 });
  for (const [name, data] of baseFiles) await storage.write(`${baseDir}/${name}`, name === file ? bytes : data);
  return storage;
}

const decoder = new TextDecoder();
/** The file's payload, mutated structurally and re-encoded with a valid header and checksum; or its bytes mutated. */
function mutatedFile(file: string, next: Random): Uint8Array {
  const bytes = baseFiles.get(file)!;
  const kind = file === '_metadata' ? 'metadata' : 'state';
  const dice = next();
  // A payload nested far deeper than JavaScript can recurse, behind a valid header and checksum.
  if (dice < 0.03) return withHeader(kind, deepJson(pick(next, [10_000, 100_000]), pick(next, ['array', 'object'] as const)));
  if (dice < 0.4) return mutateBytes(bytes, next);
  const text = decoder.decode(bytes);
  const payload = JSON.parse(text.slice(text.indexOf('\n') + 1));
  return encodeFile(kind, mutateJson(payload, next));
}

/** `body` behind a valid weir header (length and checksum right). */
function withHeader(kind: 'state' | 'metadata', body: string): Uint8Array {
  const bytes = new TextEncoder().encode(body);
  const header = new TextEncoder().encode(`${JSON.stringify({ weir: kind, version: 1, length: bytes.length, crc32: CRC32.buf(bytes) })}\n`);
  const out = new Uint8Array(header.length + bytes.length);
  out.set(header);
  out.set(bytes, header.length);
  return out;
}

/** Loads the mutated checkpoint; when it loads, restores it into a job that processes records with it. */
async function loadAndRestore(storage: CheckpointStorage): Promise<void> {
  await loadCheckpoint(storage, baseDir, JOB);
  await sumsJob(storage).start({ restore: baseDir, allowNonRestoredState: true }).done;
}

/** Opens the mutated checkpoint as a savepoint and reads everything it holds. */
async function readAll(storage: CheckpointStorage): Promise<void> {
  const savepoint = await readSavepoint(storage, baseDir);
  for (const operator of savepoint.operators) {
    await savepoint.operatorState(operator.uid);
    for (const state of await savepoint.states(operator.uid)) {
      for await (const entry of savepoint.keyedState(operator.uid, state.name)) void entry;
    }
  }
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'weir-fuzz-'));
  const storage = memoryCheckpointStorage();
  const result = await sumsJob(storage).start().done;
  baseDir = `${JOB}/chk-${result.checkpoints.at(-1)!.id}`;
  baseFiles = new Map();
  for (const name of await storage.list(baseDir)) baseFiles.set(name, await storage.read(`${baseDir}/${name}`));
  expect(Array.from(baseFiles.keys()).sort()).toEqual(['_metadata', 'in.0', 'out.0', 'sum.0.kg-0-127']);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
  console.log(`fuzz: ${Array.from(counts, ([name, n]) => `${n} ${name}`).join(', ')} (seed ${SEED.toString(16)})`);
});

describe('fuzzing every reader: only typed errors, no pollution', () => {
  it('_metadata: decoded, loaded and restored into a job', { timeout: TARGET_TIMEOUT_MS }, async () => {
    const findings = await fuzz('_metadata', (next) => mutatedFile('_metadata', next), async (bytes) => loadAndRestore(await storageWith('_metadata', bytes)));
    expect(findings).toEqual([]);
  });

  it('state files (keyed state, source offset, sink state): decoded, loaded and restored into a job', { timeout: TARGET_TIMEOUT_MS }, async () => {
    const files = ['sum.0.kg-0-127', 'in.0', 'out.0'];
    const findings = await fuzz(
      'state files',
      (next) => {
        const file = pick(next, files);
        return { file, bytes: mutatedFile(file, next) };
      },
      async ({ file, bytes }) => loadAndRestore(await storageWith(file, bytes)),
    );
    expect(findings).toEqual([]);
  });

  it('savepoints through the State Processor API', { timeout: TARGET_TIMEOUT_MS }, async () => {
    const files = ['_metadata', 'sum.0.kg-0-127', 'in.0', 'out.0'];
    const findings = await fuzz(
      'savepoints',
      (next) => {
        const file = pick(next, files);
        return { file, bytes: mutatedFile(file, next) };
      },
      async ({ file, bytes }) => readAll(await storageWith(file, bytes)),
    );
    expect(findings).toEqual([]);
  });

  it("toFile's restored sink state", { timeout: TARGET_TIMEOUT_MS }, async () => {
    const dir = join(tmp, 'sink');
    const target = join(dir, 'out.jsonl');
    const sink = fileSink<string>(target);
    const base = { end: 6, pending: [{ id: 3, part: 'out.jsonl.part-3', base: 6, size: 4 }] };
    await rm(dir, { recursive: true, force: true });
    const findings = await fuzz(
      'toFile sink states',
      (next) => (next() < 0.8 ? mutateJson(base, next) : hostileValue(next)),
      async (state) => {
        await writeFile(target, 'a\nb\nc\n').catch(() => undefined);
        await writeFile(`${target}.part-3`, 'd\ne\n').catch(() => undefined);
        const writer = await sink.open({ uid: 'out', restoredState: state as never, checkpointing: true });
        await writer.abort();
      },
    );
    expect(findings).toEqual([]);
  });

  it('source offsets (fromFile, fromArray, fromIterable, fromAsyncIterable)', { timeout: TARGET_TIMEOUT_MS }, async () => {
    const file = join(tmp, 'input.txt');
    await writeFile(file, 'one\ntwo\nthree\n');
    const sources = [fromFile(file), fromArray([1, 2, 3]), fromIterable([1, 2, 3]), fromAsyncIterable((async function* () { yield 1; })())];
    const findings = await fuzz(
      'source offsets',
      (next) => ({ source: pick(next, sources), offset: next() < 0.5 ? mutateJson(4, next) : hostileValue(next) }),
      async ({ source, offset }) => {
        const reader = await source.open({ uid: 'in', restoredOffset: offset as never });
        await reader.read(2);
        await reader.close?.();
      },
    );
    expect(findings).toEqual([]);
  });
});

describe('fuzzing the queryable state server', () => {
  let server: QueryableStateServer;
  let release: () => void;
  let done: Promise<unknown>;

  beforeAll(async () => {
    const counts = valueState<number>('count', { default: 0, queryable: 'count' });
    const input = new Subject<{ key: string | number; n: number }>();
    release = () => input.complete();
    const job = createJob({ name: 'fuzz-query' });
    job
      .source(fromObservable(input), { uid: 'in' })
      .pipe(
        keyBy((r) => r.key),
        processRecords<{ key: string | number; n: number }, never>({ onElement(_r, ctx) { ctx.state(counts).update((ctx.state(counts).value() ?? 0) + 1); } }, { uid: 'count' }),
        collect<never>().sink(),
      );
    const running = job.start();
    done = running.done;
    server = await serveQueryableState(running, { port: 0, rateLimit: false, queryTimeoutMs: 500 });
    for (let i = 0; i < 50; i++) input.next({ key: i % 2 === 0 ? `k${i}` : i, n: i });
    // Wait until the state is registered.
    for (let i = 0; i < 100 && running.queryableStates().length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  });
  afterAll(async () => {
    await server?.close();
    release?.();
    await done;
  });

  interface Request {
    method: string;
    path: string;
    body?: Uint8Array | string;
    headers?: Record<string, string>;
  }

  function mutatedRequest(next: Random): Request {
    const name = pick(next, ['count', 'nope', '%zz', '__proto__', 'constructor', '..%2F..', 'x'.repeat(5000), '%00']);
    const kind = pick(next, ['get', 'keys', 'get', 'keys', 'put', '']);
    const params = Array.from({ length: int(next, 5) }, () => {
      const param = pick(next, ['key', 'asOf', 'limit', 'cursor', 'prefix', 'from', 'to', '__proto__', 'constructor']);
      const value = pick(next, ['k2', '1', '-1', '1e308', 'NaN', '', '%zz', 'AAAA', 'eyJfX3Byb3RvX18iOjF9', '9007199254740993', 'x'.repeat(3000), '1.5']);
      return `${param}=${value}`;
    }).join('&');
    const path = pick(next, [`/v1/states/${name}/${kind}?${params}`, '/v1/states', '/v1/states/', '/', `/v1/${name}`, `//v1/states/count/get?${params}`]);
    const method = pick(next, ['GET', 'GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD']);
    if (method !== 'POST') return { method, path };
    const bodies: (() => Uint8Array | string)[] = [
      () => JSON.stringify({ json: mutateJson({ key: 'k2', prefix: 'k', limit: 5, cursor: 'AAAA' }, next) }),
      () => JSON.stringify({ json: { key: hostileValue(next), limit: hostileValue(next), cursor: hostileValue(next), from: hostileValue(next), asOf: hostileValue(next) } }),
      () => JSON.stringify({ json: { key: 1n.toString() }, meta: { values: { key: [pick(next, ['bigint', 'map', 'set', 'Date', 'regexp', 'class', 'custom', 'symbol'])] } } }),
      () => JSON.stringify({ json: { __proto__: { polluted: 1 } }, meta: { values: { '__proto__.polluted': ['undefined'] } } }),
      () => `{"json":{"key":"k2"},"meta":{"referentialEqualities":{"key":["__proto__.polluted","constructor.prototype.polluted"]}}}`,
      () => deepJson(pick(next, [100, 1000, 5000])),
      () => Uint8Array.from({ length: int(next, 200) }, () => int(next, 256)),
      () => mutateBytes(new TextEncoder().encode(superjson.stringify({ key: 'k2', limit: 3 })), next),
    ];
    const headers: Record<string, string> = next() < 0.1 ? { 'content-length': '99999999' } : {};
    return { method, path, body: pick(next, bodies)(), headers };
  }

  function send(req: Request): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const url = new URL(server.url);
      // A connection per request: a request that lies about its body length must not stall the next one's socket.
      const r = request({ host: url.hostname, port: url.port, method: req.method, path: req.path, agent: false, headers: req.headers }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        response.on('error', reject);
      });
      r.on('error', reject);
      r.setTimeout(CASE_TIMEOUT_MS, () => {
        r.destroy();
        reject(new Error(`hang: no answer within ${CASE_TIMEOUT_MS} ms`));
      });
      r.end(req.body);
    });
  }

  it('answers every mutated request with a typed status, never 500, and keeps serving', { timeout: TARGET_TIMEOUT_MS }, async () => {
    const allowed = new Set([200, 400, 401, 404, 405, 413, 429, 503]);
    const next = random(seedOf('query server'));
    const findings: string[] = [];
    let sent = 0;
    // Eight clients at once, as a real load would come.
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (sent < CASES && findings.length < 20) {
          const req = mutatedRequest(next);
          sent++;
          try {
            const { status, body } = await send(req);

            if (!allowed.has(status)) findings.push(`${req.method} ${req.path.slice(0, 200)}: ${status} ${body.slice(0, 300)}`);
          } catch (error) {
            // A request the server refuses at the HTTP level (a 400 that closes the connection) may reset it.
            if (!/ECONNRESET|socket hang up|EPIPE/.test(String(error))) findings.push(`${req.method} ${req.path.slice(0, 200)} ${JSON.stringify(req.headers)} ${String(req.body).slice(0, 100)}: ${String(error)}`);
          }
          const polluted = pollution();
          if (polluted) findings.push(`${req.method} ${req.path}: ${polluted}`);
        }
      }),
    );
    counts.set('query server requests', sent);
    expect(findings).toEqual([]);
    expect(sent).toBeGreaterThanOrEqual(CASES);
    const alive = await send({ method: 'GET', path: '/v1/states/count/get?key=k2' });
    expect(alive.status, alive.body).toBe(200);
    expect(superjson.parse<{ value: number }>(alive.body).value).toBe(1);
  });
});
