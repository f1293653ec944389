// What the NATS connector tests share: a connection to the loopback server, streams of their own (a random suffix)
// removed after, and the messages a stream holds, read back with the raw client.
import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { NATS_BATCH_HEADER, natsBatchPayload } from 'weir/node';

export const NATS = '127.0.0.1:4222';

export interface NatsStreams {
  connection: NatsConnection;
  jsm: JetStreamManager;
  /** Creates a stream named `<prefix>_<random>` over `<name>.>`, deleted by `removeAll`; returns its name. */
  create(prefix: string, config?: Partial<StreamConfig>): Promise<string>;
  /** Publishes each `[subject, payload]` with an ack, in order. */
  publish(messages: readonly (readonly [string, string])[]): Promise<void>;
  /** Publishes each `[subject, payloads]` as one message (a `Weir-Batch`, or a plain message for one payload), in order. */
  publishBatches(messages: readonly (readonly [string, readonly string[]])[]): Promise<void>;
  /** Every message the stream holds, in sequence order. */
  contents(stream: string): Promise<{ seq: number; subject: string; data: string; headers: Record<string, string> }[]>;
  removeAll(): Promise<void>;
}

/**
 * `servers`: the loopback server by default, or a test's private one; the connection reconnects for as long as it
 * takes, so that a test whose private server is killed and started again (on a loaded machine, slowly) keeps it.
 */
export async function natsStreams(servers = NATS): Promise<NatsStreams> {
  const connection = await connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const jsm = await jetstreamManager(connection);
  const js = jetstream(connection);
  const created: string[] = [];
  return {
    connection,
    jsm,
    async create(prefix, config = {}) {
      const name = `${prefix}_${randomBytes(4).toString('hex')}`;
      await jsm.streams.add({ name, subjects: [`${name}.>`], ...config });
      created.push(name);
      return name;
    },
    async publish(messages) {
      const window = 64;
      for (let i = 0; i < messages.length; i += window) {
        await Promise.all(messages.slice(i, i + window).map(([subject, data]) => js.publish(subject, data)));
      }
    },
    async publishBatches(messages) {
      const window = 64;
      const one = ([subject, payloads]: readonly [string, readonly string[]]) => {
        if (payloads.length === 1) return js.publish(subject, payloads[0]!);
        const batch = headers();
        batch.set(NATS_BATCH_HEADER, String(payloads.length));
        return js.publish(subject, natsBatchPayload(payloads), { headers: batch });
      };
      for (let i = 0; i < messages.length; i += window) await Promise.all(messages.slice(i, i + window).map(one));
    },
    async contents(stream) {
      const { state } = await jsm.streams.info(stream);
      const out: { seq: number; subject: string; data: string; headers: Record<string, string> }[] = [];
      if (state.messages === 0) return out;
      const consumer = await js.consumers.get(stream, {});
      while (out.length < state.messages) {
        for await (const m of await consumer.fetch({ max_messages: Math.min(1000, state.messages - out.length), expires: 5000 })) {
          const headers: Record<string, string> = {};
          for (const [key, values] of m.headers ?? []) headers[key] = values.join(',');
          out.push({ seq: m.seq, subject: m.subject, data: m.string(), headers });
        }
      }
      await consumer.delete().catch(() => undefined);
      return out;
    },
    async removeAll() {
      for (const name of created.splice(0)) await jsm.streams.delete(name).catch(() => undefined);
      await connection.close();
    },
  };
}

/** The kill campaigns' input: `records` counts of one, by `users` users in turn, spread over subjects a, b and c of `stream`. */
export function userCountMessages(stream: string, records: number, users: number): [string, string][] {
  const subjects = ['a', 'b', 'c'].map((s) => `${stream}.${s}`);
  return Array.from({ length: records }, (_, i) => [subjects[i % 3]!, JSON.stringify({ user: `u${i % users}`, n: 1 })]);
}
