// A nats-server of a test's own, for the tests that must stop a server (outage, fencing): the machine's binary on a free port.
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';

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
