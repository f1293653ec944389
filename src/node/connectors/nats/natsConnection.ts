import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, NodeConnectionOptions } from '@nats-io/transport-node';
import { lazyPackage } from '../lazyPackage.js';

/** The NATS client and its JetStream API, imported when a NATS connector first connects (see lazyPackage). */
export const natsTransport = lazyPackage(() => import('@nats-io/transport-node'));
export const natsJetStream = lazyPackage(() => import('@nats-io/jetstream'));
/** NATS KV, imported when a scale-out member joins or its group's status is read (see lazyPackage). */
export const natsKv = lazyPackage(() => import('@nats-io/kv'));

/** How a NATS connector reaches its server: the client's own connection options (servers, user, pass, token, tls…). */
export type NatsConnectOptions = NodeConnectionOptions;

/** A connection opened on first use and shared by a connector's readers or writers, with its JetStream handles. */
export interface LazyNatsConnection {
  get(): Promise<{ connection: NatsConnection; js: JetStreamClient; jsm: JetStreamManager }>;
  close(): Promise<void>;
}

/**
 * Opens one connection per connector instance, on first use: a job definition builds its connectors before it runs
 * (and a worker thread builds its own), so connecting in the factory would hold sockets for jobs never started. A
 * failed connect is forgotten, so that the next attempt of the job connects again rather than reusing the failure.
 */
export function lazyNatsConnection(options: NatsConnectOptions): LazyNatsConnection {
  let opened: Promise<{ connection: NatsConnection; js: JetStreamClient; jsm: JetStreamManager }> | undefined;
  return {
    get() {
      if (opened) return opened;
      const attempt = (async () => {
        const [{ connect }, { jetstream, jetstreamManager }] = await Promise.all([natsTransport.load(), natsJetStream.load()]);
        // Reconnecting for ever by default: the readers and writers decide when an outage has lasted too long.
        const connection = await connect({ name: 'weir', maxReconnectAttempts: -1, ...options });
        return { connection, js: jetstream(connection), jsm: await jetstreamManager(connection) };
      })();
      opened = attempt;
      attempt.catch(() => {
        if (opened === attempt) opened = undefined;
      });
      return attempt;
    },
    async close() {
      const current = opened;
      opened = undefined;
      const handles = await current?.catch(() => undefined);
      await handles?.connection.close();
    },
  };
}
