import { connect } from 'node:net';

/** The servers the connector tests talk to, on loopback, and the command this machine starts each one with. */
export const SERVERS = {
  postgres: { port: 5432, start: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start' },
  redis: {
    port: 6379,
    start: 'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log',
  },
  nats: {
    port: 4222,
    start: 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log',
  },
} as const;

export type ServerName = keyof typeof SERVERS;

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(3000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Whether `name` answers on loopback, for `describe.skipIf(!(await serverUp('redis')))`. Outside CI a missing
 * server skips its tests with one loud line saying how to start it; under `CI=true` it is a failure, since CI
 * must run every connector test.
 */
export async function serverUp(name: ServerName): Promise<boolean> {
  const { port, start } = SERVERS[name];
  if (await answers(port)) return true;
  const advice = `${name} does not answer on 127.0.0.1:${port}; start it with: ${start}`;
  if (process.env.CI === 'true') throw new Error(`CI must run the ${name} tests: ${advice}`);
  console.warn(`\n!!!! ${name.toUpperCase()} TESTS SKIPPED: ${advice}\n`);
  return false;
}
