// A nats-server of a test's own, for the tests that must stop a server (outage, fencing, server configuration): the
// machine's binary on a free port, its store in a temporary directory, so that killing it disturbs no other test.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BINARY = '/usr/sbin/nats-server';

/** The nats-server binary, or undefined where it is not installed (CI must have it). */
export const NATS_SERVER_BINARY: string | undefined = existsSync(BINARY) ? BINARY : undefined;
if (!NATS_SERVER_BINARY && process.env.CI === 'true') throw new Error(`CI must run the tests that stop a NATS server of their own: ${BINARY} is not installed`);

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

export interface PrivateNatsServer {
  /** `127.0.0.1:<port>`, for a client's `servers`. */
  readonly servers: string;
  /** Starts the server again after `kill`, on the same port and store (what it had stored survives). */
  start(): void;
  /** SIGKILLs the server and resolves once it has exited. */
  kill(): Promise<void>;
  /** Kills the server if it runs, and removes its store. */
  remove(): Promise<void>;
}

/**
 * Starts a private JetStream server (named `name` in its temporary directory). `config`, given the port and the store
 * directory, is a configuration file's text for a server that needs more than JetStream (subject mappings).
 */
export async function privateNatsServer(name: string, config?: (port: number, store: string) => string): Promise<PrivateNatsServer> {
  if (!NATS_SERVER_BINARY) throw new Error(`${BINARY} is not installed`);
  const dir = await mkdtemp(join(tmpdir(), `weir-${name}-`));
  const port = await freePort();
  const store = join(dir, 'store');
  const args = ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store];
  if (config) {
    await writeFile(join(dir, 'server.conf'), config(port, store));
    args.splice(0, args.length, '-c', join(dir, 'server.conf'));
  }
  let server: ChildProcess | undefined;
  const running = () => server !== undefined && server.exitCode === null && server.signalCode === null;
  const kill = () =>
    new Promise<void>((resolve) => {
      if (!running()) return resolve();
      server!.once('exit', () => resolve());
      server!.kill('SIGKILL');
    });
  const start = () => {
    server = spawn(NATS_SERVER_BINARY, args, { stdio: 'ignore' });
  };
  start();
  return {
    servers: `127.0.0.1:${port}`,
    start,
    kill,
    async remove() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
