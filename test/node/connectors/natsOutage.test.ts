import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJob, memoryCheckpointStorage } from 'weir';
import { natsSource, toNats } from 'weir/node';
import { NATS_SERVER_BINARY, privateNatsServer, type PrivateNatsServer } from '../../support/privateNatsServer';

// A NATS server that goes away and comes back: a server of this test's own (the machine's nats-server binary on a free
// port, its store in a temporary directory), so that killing it disturbs no other test. A job reading one stream and
// publishing to another keeps running through the outage and, once the server is back, goes on from where it was:
// every record published once.

const present = NATS_SERVER_BINARY !== undefined;
if (!present) console.warn('\n!!!! NATS OUTAGE TEST SKIPPED: /usr/sbin/nats-server is not installed\n');

describe.skipIf(!present)('NATS server outage', () => {
  let server: PrivateNatsServer | undefined;
  let admin: NatsConnection | undefined;

  beforeAll(async () => {
    server = await privateNatsServer('nats-outage');
    admin = await connect({ servers: server.servers, waitOnFirstConnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  }, 60_000);
  afterAll(async () => {
    await admin?.close();
    await server?.remove();
  });

  it('keeps the job running while the server is away, then goes on with every record published once', { timeout: 240_000 }, async () => {
    const { servers } = server!;
    const jsm = await jetstreamManager(admin!);
    const js = jetstream(admin!);
    await jsm.streams.add({ name: 'IN', subjects: ['IN.>'] });
    await jsm.streams.add({ name: 'OUT', subjects: ['OUT.>'], duplicate_window: 10 * 60 * 1e9 });
    const publish = async (from: number, to: number) => {
      for (let i = from; i < to; i++) await js.publish('IN.orders', JSON.stringify({ i }));
    };
    /** Messages in OUT, or -1 while the server does not answer. */
    const published = () => jsm.streams.info('OUT').then((info) => info.state.messages, () => -1);
    await publish(0, 100);

    const job = createJob({ name: 'nats-outage', checkpoints: { storage: memoryCheckpointStorage(), interval: 100, tolerableFailures: 1_000, timeout: 30_000 } });
    job
      .source(natsSource<{ i: number }>({ servers, stream: 'IN', bounded: false }), { uid: 'in' })
      .pipe(toNats<{ i: number }>({ servers, subject: () => 'OUT.copy' }, { uid: 'out' }));
    const running = job.start();
    let failed: unknown;
    running.done.catch((error: unknown) => (failed = error));
    // Each step waits on a checkpoint (which may fail while the server is away), never on a clock.
    const checkpointUntil = async (done: () => Promise<boolean>) => {
      while (!(await done())) {
        expect(failed).toBeUndefined();
        await running.checkpoint().catch(() => undefined);
      }
    };
    await checkpointUntil(async () => (await published()) === 100);

    await server!.kill();
    // A checkpoint while the server is away: it may fail, the job does not.
    await running.checkpoint().catch(() => undefined);
    expect(failed).toBeUndefined();
    server!.start();
    // Published once the connection is back: the client retries until the server takes it.
    await checkpointUntil(async () => (await published()) >= 0);
    await publish(100, 150);
    await checkpointUntil(async () => (await published()) >= 150);
    await running.stop();
    expect(failed).toBeUndefined();

    const out = await js.consumers.get('OUT');
    const values: number[] = [];
    for await (const m of await out.fetch({ max_messages: 150, expires: 5000 })) values.push(m.json<{ i: number }>().i);
    expect(values).toEqual(Array.from({ length: 150 }, (_, i) => i));
    expect((await jsm.streams.info('OUT')).state.messages).toBe(150);
  });
});
