import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, createJob, fromArray, JobDefinitionError, keyGroupOf, keyGroupRangeFor } from 'weir';
import { keyGroupPartitions, natsSource, toNats } from 'weir/node';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, type NatsStreams } from '../connectors/natsStreams';
import { NATS_SERVER_BINARY, privateNatsServer, type PrivateNatsServer } from '../../support/privateNatsServer';

const up = await serverUp('nats');

interface Order {
  customer: string;
  n: number;
}

const orders: Order[] = Array.from({ length: 400 }, (_, n) => ({ customer: `c${n % 37}`, n }));

describe('keyGroupPartitions', () => {
  it('names one subject per key group, the key’s by weir’s keyGroupOf, and reads the key group back', () => {
    const topic = keyGroupPartitions({ prefix: 'shop.eu', topic: 'orders', maxParallelism: 16 });
    expect(topic.streamSubject).toBe('shop.eu.orders.*');
    expect(topic.subject(3)).toBe('shop.eu.orders.3');
    expect(topic.subjectOfKey('c7')).toBe(`shop.eu.orders.${keyGroupOf('c7', 16)}`);
    expect(topic.byKey((o: Order) => o.customer)({ customer: 'c7', n: 0 })).toBe(topic.subjectOfKey('c7'));
    expect(topic.subjects({ start: 2, end: 4 })).toEqual(['shop.eu.orders.2', 'shop.eu.orders.3', 'shop.eu.orders.4']);
    expect(topic.subjects(new Set([9, 1]))).toEqual(['shop.eu.orders.9', 'shop.eu.orders.1']);
    expect(topic.keyGroupOf('shop.eu.orders.12')).toBe(12);
    expect(topic.keyGroupOf('shop.eu.orders.16')).toBeUndefined();
    expect(topic.keyGroupOf('shop.eu.other.1')).toBeUndefined();
    expect(keyGroupPartitions({ prefix: 'p', topic: 't' }).maxParallelism).toBe(128);
  });

  it('rejects subjects the server would misread and key groups out of range with JobDefinitionError', () => {
    expect(() => keyGroupPartitions({ prefix: 'a.*', topic: 't' })).toThrow(JobDefinitionError);
    expect(() => keyGroupPartitions({ prefix: 'a', topic: 't.u' })).toThrow(/topic/);
    expect(() => keyGroupPartitions({ prefix: 'a', topic: 't', maxParallelism: 0 })).toThrow(/maxParallelism/);
    expect(() => keyGroupPartitions({ prefix: 'a', topic: 't', maxParallelism: 8 }).subject(8)).toThrow(/key group 8/);
  });
});

describe.skipIf(!up)('partitions that are key groups, on the server', () => {
  let nats: NatsStreams;
  beforeAll(async () => {
    nats = await natsStreams();
  });
  afterAll(async () => {
    await nats?.removeAll();
  });

  it('a sink writes each record to its key’s partition, and sources reading two halves of the key groups read each key whole, once', { timeout: 120_000 }, async () => {
    const stream = await nats.create('weir_partitions');
    const topic = keyGroupPartitions({ prefix: stream, topic: 'orders', maxParallelism: 16 });
    const producer = createJob({ name: 'partition-producer' });
    producer.source(fromArray(orders), { uid: 'orders' }).pipe(toNats({ servers: NATS, subject: topic.byKey((o: Order) => o.customer) }, { uid: 'out' }));
    await producer.start().done;

    const contents = await nats.contents(stream);
    expect(contents).toHaveLength(orders.length);
    for (const message of contents) {
      const order = JSON.parse(message.data) as Order;
      expect(topic.keyGroupOf(message.subject)).toBe(keyGroupOf(order.customer, 16));
    }

    const halves = [0, 1].map((index) => keyGroupRangeFor(index, 2, 16));
    const read = await Promise.all(
      halves.map(async (range, index) => {
        const out = collect<Order>();
        const job = createJob({ name: `partition-reader-${index}` });
        job.source(natsSource<Order>({ servers: NATS, stream, subjects: topic.subjects(range) }), { uid: 'orders' }).pipe(out.sink({ uid: 'out' }));
        await job.start().done;
        return out.values;
      }),
    );
    for (const [index, range] of halves.entries()) {
      for (const order of read[index]!) expect(keyGroupOf(order.customer, 16)).toBeGreaterThanOrEqual(range.start);
      for (const order of read[index]!) expect(keyGroupOf(order.customer, 16)).toBeLessThanOrEqual(range.end);
    }
    // Every order once, and each customer's orders in the order they were produced (one partition per key).
    expect([...read[0]!, ...read[1]!].map((o) => o.n).sort((a, b) => a - b)).toEqual(orders.map((o) => o.n));
    for (const half of read) {
      for (const customer of new Set(half.map((o) => o.customer))) {
        const ns = half.filter((o) => o.customer === customer).map((o) => o.n);
        expect(ns).toEqual([...ns].sort((a, b) => a - b));
      }
    }
  });
});

/** FNV-1a, 32 bits, over the UTF-8 bytes: what nats-server's `partition(n)` mapping hashes a token with. */
function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

describe.skipIf(!NATS_SERVER_BINARY)("the server's partition(n) mapping, for foreign producers", () => {
  let server: PrivateNatsServer | undefined;
  afterAll(() => server?.remove());

  it('places a key by FNV-1a, not by weir’s key-group hash: foreign producers must publish to weir’s key group themselves', { timeout: 60_000 }, async () => {
    // A mapping is server configuration, so this test runs a server of its own with one.
    server = await privateNatsServer(
      'nats-mapping',
      (port, store) => `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${store}" }\nmappings = { "foreign.orders.*": "shop.orders.{{partition(16,1)}}" }\n`,
    );
    const nc = await connect({ servers: server.servers, waitOnFirstConnect: true, reconnectTimeWait: 100 });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'SHOP', subjects: ['shop.orders.*'] });
      const customers = Array.from({ length: 200 }, (_, i) => `c${i}`);
      const js = jetstream(nc);
      for (const customer of customers) await js.publish(`foreign.orders.${customer}`, JSON.stringify({ customer }));
      const topic = keyGroupPartitions({ prefix: 'shop', topic: 'orders', maxParallelism: 16 });
      let agree = 0;
      for (let seq = 1; seq <= customers.length; seq++) {
        const message = await jsm.streams.getMessage('SHOP', { seq });
        const { customer } = message!.json<{ customer: string }>();
        expect(topic.keyGroupOf(message!.subject)).toBe(fnv1a32(customer) % 16);
        if (topic.subjectOfKey(customer) === message!.subject) agree++;
      }
      // About 1 in 16 by chance: the two hashes are unrelated.
      expect(agree).toBeLessThan(customers.length / 4);
    } finally {
      await nc.close();
    }
  });
});
