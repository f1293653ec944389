import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointCorruptedError, CheckpointNotFoundError, ConnectorError, JobDefinitionError } from 'weir';
import { natsObjectCheckpointStorage } from 'weir/node';
import { describeCheckpointStorage } from '../../storage/checkpointStorage.conformance';
import { NATS } from '../connectors/natsStreams';
import { NATS_SERVER_BINARY, privateNatsServer, type PrivateNatsServer } from '../../support/privateNatsServer';

const freshBucket = () => `weir-test-chk-${randomBytes(4).toString('hex')}`;

/** Removes a bucket (its stream `OBJ_<bucket>`) through a connection of the test's own. */
async function destroyBucket(bucket: string): Promise<void> {
  const nc = await connect({ servers: NATS });
  try {
    await (await jetstreamManager(nc)).streams.delete(`OBJ_${bucket}`).catch(() => undefined);
  } finally {
    await nc.close();
  }
}

describeCheckpointStorage(
  'NATS Object Store',
  async () => {
    const bucket = freshBucket();
    const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    return {
      storage,
      cleanup: async () => {
        await storage.close();
        await destroyBucket(bucket);
      },
    };
  },
  { writeStructured: false, lock: false },
);

describe('natsObjectCheckpointStorage', () => {
  let nc: NatsConnection;
  const buckets: string[] = [];
  beforeAll(async () => {
    nc = await connect({ servers: NATS });
  });
  afterEach(async () => {
    for (const bucket of buckets.splice(0)) await destroyBucket(bucket);
  });
  afterAll(async () => {
    await nc.close();
  });

  it('rejects a bucket name the server would refuse and a timeout that is not positive, with JobDefinitionError', () => {
    expect(() => natsObjectCheckpointStorage({ servers: NATS, bucket: 'a.b' })).toThrow(JobDefinitionError);
    expect(() => natsObjectCheckpointStorage({ servers: NATS, bucket: '' })).toThrow(/bucket/);
    expect(() => natsObjectCheckpointStorage({ servers: NATS, bucket: 'ok', timeout: 0 })).toThrow(/timeout/);
  });

  it('is shared: what one storage (one process) writes, another reads, lists and removes', async () => {
    const bucket = freshBucket();
    buckets.push(bucket);
    const one = natsObjectCheckpointStorage({ servers: NATS, bucket });
    const two = natsObjectCheckpointStorage({ servers: NATS, bucket });
    try {
      await one.write('job/chk-3/_metadata', new TextEncoder().encode('shared'));
      expect(new TextDecoder().decode(await two.read('job/chk-3/_metadata'))).toBe('shared');
      expect(await two.list('job')).toEqual(['chk-3']);
      await two.remove('job/chk-3');
      await expect(one.read('job/chk-3/_metadata')).rejects.toThrow(CheckpointNotFoundError);
      expect(one.location).toContain(bucket);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it('lists and removes without leaving consumers on the server, and a removed object leaves nothing in the bucket', async () => {
    const bucket = freshBucket();
    buckets.push(bucket);
    const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    const jsm = await jetstreamManager(nc);
    try {
      await storage.write('job/chk-1/_metadata', new TextEncoder().encode('one'));
      await storage.write('job/chk-1/state', new Uint8Array(300_000));
      await storage.write('job/chk-2/_metadata', new TextEncoder().encode('two'));
      await storage.remove('job/chk-1');
      expect(await storage.list('job')).toEqual(['chk-2']);
      expect(await storage.list('job/chk-2')).toEqual(['_metadata']);
      // A retention pass lists and removes after every checkpoint: each consumer the client's list() opened stayed
      // five minutes, and each removed object kept a marker that every later listing read again.
      const { state } = await jsm.streams.info(`OBJ_${bucket}`);
      expect(state.consumer_count).toBe(0);
      await storage.remove('job');
      expect((await jsm.streams.info(`OBJ_${bucket}`)).state.messages).toBe(0);
      expect(await storage.list('')).toEqual([]);
      await expect(storage.read('job/chk-2/_metadata')).rejects.toThrow(CheckpointNotFoundError);
    } finally {
      await storage.close();
    }
  });

  it('rejects an object whose chunks no longer match its digest, or whose chunks are gone, with CheckpointCorruptedError naming it', async () => {
    const bucket = freshBucket();
    buckets.push(bucket);
    const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    try {
      const data = new Uint8Array(300_000).map((_, i) => i & 0xff);
      await storage.write('job/chk-1/state', data);
      await storage.write('job/chk-1/gone', data);
      // Damage the objects behind the storage's back, the way a faulty disk or a stray client would.
      const os = await new Objm(nc).open(bucket);
      const jsm = await jetstreamManager(nc);
      const damaged = (await os.info('job/chk-1/state'))!;
      await jsm.streams.purge(`OBJ_${bucket}`, { filter: `$O.${bucket}.C.${damaged.nuid}` });
      const flipped = new Uint8Array(data);
      flipped[1000] = flipped[1000]! ^ 0xff;
      // Chunk by chunk, as the client sent them, so that only the bytes differ.
      const chunk = damaged.options!.max_chunk_size!;
      for (let at = 0; at < flipped.length; at += chunk) await jetstream(nc).publish(`$O.${bucket}.C.${damaged.nuid}`, flipped.subarray(at, at + chunk));
      const gone = (await os.info('job/chk-1/gone'))!;
      await jsm.streams.purge(`OBJ_${bucket}`, { filter: `$O.${bucket}.C.${gone.nuid}` });

      await expect(storage.read('job/chk-1/state')).rejects.toThrow(CheckpointCorruptedError);
      await expect(storage.read('job/chk-1/state')).rejects.toThrow(/job\/chk-1\/state.*digest/);
      await expect(storage.read('job/chk-1/gone')).rejects.toThrow(CheckpointCorruptedError);
      await expect(storage.read('job/chk-1/gone')).rejects.toThrow(/job\/chk-1\/gone.*truncated/);
    } finally {
      await storage.close();
    }
  });

  it('ends a read whose object is removed meanwhile with CheckpointNotFoundError, instead of waiting for ever', { timeout: 120_000 }, async () => {
    // A status read or a purge reads a committed checkpoint that the members' retention may remove at any moment; the
    // client's getBlob waited for ever on the chunks it no longer found. The chunks go once the read's consumer is
    // there (the retention's second purge); a read that was quicker than that gives the whole object, and tries again.
    const bucket = freshBucket();
    buckets.push(bucket);
    const storage = natsObjectCheckpointStorage({ servers: NATS, bucket });
    const jsm = await jetstreamManager(nc);
    const stream = `OBJ_${bucket}`;
    const data = new Uint8Array(24 << 20).map((_, i) => i & 0xff);
    const outcomes: string[] = [];
    try {
      for (let attempt = 1; attempt <= 5 && !outcomes.includes('removed'); attempt++) {
        const name = `job/chk-${attempt}/state`;
        await storage.write(name, data);
        const { nuid } = (await (await new Objm(nc).open(bucket)).info(name))!;
        const consumers = (await jsm.streams.info(stream)).state.consumer_count;
        let settled = false;
        const reading = storage.read(name).then(
          (read) => ({ read }),
          (error: unknown) => ({ error }),
        );
        void reading.then(() => (settled = true));
        while (!settled && (await jsm.streams.info(stream)).state.consumer_count === consumers) await new Promise((resolve) => setTimeout(resolve, 1));
        await jsm.streams.purge(stream, { filter: `$O.${bucket}.C.${nuid}` });
        const outcome = await reading;
        if ('read' in outcome) {
          expect(outcome.read).toEqual(data);
          outcomes.push('whole');
        } else {
          expect(outcome.error).toBeInstanceOf(CheckpointNotFoundError);
          expect((outcome.error as Error).message).toContain(`'${name}' was removed while it was read`);
          outcomes.push('removed');
        }
      }
      expect(outcomes).toContain('removed');
    } finally {
      await storage.close();
    }
  });
});

describe.skipIf(!NATS_SERVER_BINARY)('natsObjectCheckpointStorage without its server', () => {
  let server: PrivateNatsServer | undefined;
  afterAll(() => server?.remove());

  it('fails each operation with ConnectorError naming the bucket and path once the server is gone, and works again once it is back', { timeout: 120_000 }, async () => {
    server = await privateNatsServer('nats-obj');
    const { servers } = server;
    const storage = natsObjectCheckpointStorage({ servers, bucket: 'outage', timeout: 1000, connection: { waitOnFirstConnect: true, reconnectTimeWait: 100 } });
    try {
      await storage.write('job/chk-1/_metadata', new Uint8Array([1, 2, 3]));
      await server.kill();
      await expect(storage.read('job/chk-1/_metadata')).rejects.toThrow(ConnectorError);
      await expect(storage.write('job/chk-2/_metadata', new Uint8Array([4]))).rejects.toThrow(/outage.*job\/chk-2\/_metadata.*reachable/);
      await expect(storage.list('job')).rejects.toThrow(ConnectorError);

      server.start();
      // Back: the file written before the outage is intact (the server's store is on disk). The client reconnects
      // in its own time, so the read is retried until it answers rather than after a guessed delay.
      let read: Uint8Array | undefined;
      while (read === undefined) read = await storage.read('job/chk-1/_metadata').catch(() => undefined);
      expect([...read]).toEqual([1, 2, 3]);
    } finally {
      await storage.close();
    }
  });
});
